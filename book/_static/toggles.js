// sphinx-togglebutton names every toggle of hidden content "Toggle hidden content", in English on the Chinese
// pages too, while it shows the reader another label ("Click to show", 点击显示: togglebutton_hint). Name each
// toggle by the label it shows, and again whenever a click changes that label.
document.addEventListener("DOMContentLoaded", function () {
  setTimeout(function () {  // after togglebutton.js, which adds its buttons when the document has loaded
    document.querySelectorAll("button.toggle-button").forEach(function (button) {
      function name() { button.setAttribute("aria-label", button.dataset.toggleHint); }
      name();
      new MutationObserver(name).observe(button, { attributes: true, attributeFilter: ["data-toggle-hint"] });
    });
  });
});
