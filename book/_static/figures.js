// A wide figure on a narrow screen scrolls sideways in its box (book/_ext/wide_figures.py): while it does, the box
// is a keyboard stop (arrow keys scroll it) named by the figure's alt text; when it fits, it is not.
(function () {
  function mark() {
    document.querySelectorAll(".vit-wide-figure").forEach(function (box) {
      var image = box.querySelector("img");
      if (box.scrollWidth > box.clientWidth + 1) {
        box.tabIndex = 0;
        box.setAttribute("role", "region");
        box.setAttribute("aria-label", image ? image.alt : "");
      } else {
        box.removeAttribute("tabindex");
        box.removeAttribute("role");
        box.removeAttribute("aria-label");
      }
    });
  }
  if (document.readyState === "loading") { document.addEventListener("DOMContentLoaded", mark); } else { mark(); }
  window.addEventListener("load", mark);
  window.addEventListener("resize", mark);
})();
