// Opens every collapsed block (the exercises' solutions) before printing,
// so that a printout has the answers; closes them again afterwards. The
// widgets are left closed: they are absent from print, and opening one
// would load its WebAssembly module.
(() => {
  let opened = [];
  window.addEventListener("beforeprint", () => {
    opened = [...document.querySelectorAll("details:not([open])")]
      .filter((d) => !d.closest(".widget"));
    opened.forEach((d) => { d.open = true; });
  });
  window.addEventListener("afterprint", () => {
    opened.forEach((d) => { d.open = false; });
    opened = [];
  });
})();
