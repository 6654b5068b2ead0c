// A link to the same page in the book's other edition, at the right of the
// menu bar. The editions are built side by side (see the README): the
// English into book/html/, the Chinese into book/zh-CN/html/; `mdbook
// serve` serves one edition, so there the link leads nowhere.
(() => {
  const zh = document.documentElement.lang.startsWith("zh");
  const root = new URL(path_to_root || "./", location.href);
  const other = new URL(zh ? "../../html/" : "../zh-CN/html/", root);
  const link = document.createElement("a");
  link.className = "language-switch";
  // the page, and the section the reader is at (its id is the same in both
  // editions where the page gives it, `## Title {#id}`)
  const point = () => {
    const page = location.pathname.slice(root.pathname.length) + location.hash;
    link.href = new URL(page, other).href;
  };
  point();
  window.addEventListener("hashchange", point);
  link.hreflang = zh ? "en" : "zh-CN";
  link.lang = link.hreflang;
  link.textContent = zh ? "English" : "中文";
  link.title = zh ? "This page in English" : "本页的中文版";
  document.querySelector("#mdbook-menu-bar .right-buttons")?.prepend(link);
})();
