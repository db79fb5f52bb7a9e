// The website's players (vit_edu.widgets.frames): a screen reader hears what a move changed, once, after the
// reader pauses, not on every step of a slider. The picture's caption is read into a polite status region.
(function () {
  function announce(player) {
    var caption = player.querySelector(".vit-frames-caption");
    var live = document.createElement("div");
    live.className = "visually-hidden vit-frames-live";
    live.setAttribute("role", "status");
    live.setAttribute("aria-live", "polite");
    player.appendChild(live);
    var timer = null;
    player.addEventListener("input", function () {
      clearTimeout(timer);
      timer = setTimeout(function () {
        var text = caption ? caption.textContent.trim() : "";
        var image = player.querySelector("img.vit-frames-image");
        live.textContent = text || (image ? image.getAttribute("alt") : "");
      }, 600);
    });
  }
  function start() { document.querySelectorAll(".vit-frames").forEach(announce); }
  if (document.readyState === "loading") { document.addEventListener("DOMContentLoaded", start); } else { start(); }
})();
