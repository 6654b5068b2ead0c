// The book's own search, which finds Chinese words (mdBook's, disabled in
// book.toml, splits text on spaces only, so 机制 inside 注意力机制 is no
// word of its own). The index, written at build time by mdbook-listings
// (crates/attention-book/src/search.rs), holds each section's plain text;
// a query matches a section when every one of its space-separated terms is
// a substring of it, ignoring case. The index loads when the search opens;
// a result leads to its section with the matches highlighted. mdBook's
// search bar markup and classes are reused, so its themes style this one.
(() => {
  const zh = document.documentElement.lang.startsWith("zh");
  const words = zh
    ? {
        title: "搜索（S 或 /）",
        placeholder: "搜索本书……",
        found: (n, total, q) => n < total
          ? `找到 ${total} 个与“${q}”相关的结果，显示前 ${n} 个：`
          : `找到 ${n} 个与“${q}”相关的结果：`,
        failed: "无法加载搜索索引。",
        none: (q) => `没有找到与“${q}”相关的结果。`,
      }
    : {
        title: "Search (S or /)",
        placeholder: "Search this book ...",
        found: (n, total, q) => n < total
          ? `The first ${n} of ${total} search results for '${q}':`
          : `${n} search result${n === 1 ? "" : "s"} for '${q}':`,
        failed: "The search index could not be loaded.",
        none: (q) => `No search results for '${q}'.`,
      };
  const MAX_RESULTS = 30;
  const TEASER = zh ? 40 : 80; // characters each side of the first match

  const escape = (s) =>
    s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
  // Lower case, curly quotes as straight ones (the pages show ’ and “ where
  // their source, which the index holds, has ' and "): one character for
  // one, so that positions carry over.
  const fold = (s) => s.toLowerCase().replace(/[‘’]/g, "'").replace(/[“”]/g, '"');
  const termsOf = (query) =>
    fold(query).split(/\s+/).filter((t) => t.length > 0);
  const count = (haystack, term) => haystack.split(term).length - 1;

  // Every occurrence of a term in `text`, escaped, with the terms in <em>.
  function emphasise(text, terms) {
    const lower = fold(text);
    let out = "";
    let at = 0;
    while (at < text.length) {
      const hits = terms
        .map((t) => [lower.indexOf(t, at), t.length])
        .filter(([i]) => i >= 0)
        .sort((a, b) => a[0] - b[0]);
      if (hits.length === 0) break;
      const [i, n] = hits[0];
      out += escape(text.slice(at, i)) + "<em>" + escape(text.slice(i, i + n)) + "</em>";
      at = i + n;
    }
    return out + escape(text.slice(at));
  }

  function teaser(text, terms) {
    const lower = fold(text);
    const first = Math.max(0, Math.min(...terms.map((t) => {
      const i = lower.indexOf(t);
      return i < 0 ? Infinity : i;
    })));
    const start = Math.max(0, first - TEASER);
    const end = Math.min(text.length, first + TEASER);
    return (start > 0 ? "…" : "") + emphasise(text.slice(start, end), terms) +
      (end < text.length ? "…" : "");
  }

  // The sections every term occurs in: those whose heading has it first,
  // then by how often the text has it (up to 10 times, so that a long
  // section does not win by length alone), in book order.
  function search(index, query) {
    const terms = termsOf(query);
    if (terms.length === 0) return [];
    return index
      .map((section, order) => {
        const heading = fold(section.heading);
        const text = fold(section.text);
        let score = 0;
        for (const t of terms) {
          const inHeading = count(heading, t);
          const inText = count(text, t);
          if (inHeading + inText === 0) return null;
          score += 20 * Math.min(inHeading, 1) + Math.min(inText, 10);
        }
        return { section, score, order };
      })
      .filter((r) => r !== null)
      .sort((a, b) => b.score - a.score || a.order - b.order);
  }

  function resultItem({ section }, query, terms) {
    const href = `${path_to_root}${section.page}?search=${encodeURIComponent(query)}` +
      `&section=${section.ordinal}`;
    const crumbs = section.heading === section.chapter
      ? section.chapter
      : `${section.chapter} » ${section.heading}`;
    return `<li><a href="${escape(href)}">${escape(crumbs)}</a>` +
      `<span class="teaser">${teaser(section.text, terms)}</span></li>`;
  }

  function buildBar() {
    const toggle = document.createElement("button");
    toggle.id = "mdbook-search-toggle";
    toggle.className = "icon-button";
    toggle.type = "button";
    toggle.title = words.title;
    toggle.setAttribute("aria-label", words.title);
    toggle.setAttribute("aria-expanded", "false");
    toggle.setAttribute("aria-keyshortcuts", "/ s");
    toggle.setAttribute("aria-controls", "mdbook-searchbar");
    // A magnifying glass.
    toggle.innerHTML =
      '<svg viewBox="0 0 16 16" width="16" height="16" aria-hidden="true" ' +
      'fill="none" stroke="currentColor" stroke-width="2">' +
      '<circle cx="6.5" cy="6.5" r="5"/><path d="M10.2 10.2 15 15"/></svg>';
    document.querySelector("#mdbook-menu-bar .left-buttons").append(toggle);

    const wrapper = document.createElement("div");
    wrapper.id = "mdbook-search-wrapper";
    wrapper.className = "hidden";
    wrapper.innerHTML =
      '<form id="mdbook-searchbar-outer" class="searchbar-outer" role="search">' +
      '<div class="search-wrapper"><input type="search" id="mdbook-searchbar" ' +
      `name="searchbar" placeholder="${words.placeholder}" ` +
      'aria-controls="mdbook-searchresults-outer" autocomplete="off"></div></form>' +
      '<div id="mdbook-searchresults-outer" class="searchresults-outer hidden">' +
      '<div id="mdbook-searchresults-header" class="searchresults-header"></div>' +
      '<ul id="mdbook-searchresults"></ul></div>';
    document.getElementById("mdbook-menu-bar").after(wrapper);
    return { toggle, wrapper };
  }

  // The index script for the page's language, loaded once.
  let loading = null;
  function loadIndex() {
    loading ??= new Promise((resolve, reject) => {
      const script = document.createElement("script");
      script.src = `${path_to_root}search/${document.documentElement.lang}.js`;
      script.onload = () => resolve(window.bookSearchIndex);
      script.onerror = () => reject(new Error(`cannot load ${script.src}`));
      document.head.append(script);
    });
    return loading;
  }

  function setUpBar() {
    const { toggle, wrapper } = buildBar();
    const input = wrapper.querySelector("#mdbook-searchbar");
    const outer = wrapper.querySelector("#mdbook-searchresults-outer");
    const header = wrapper.querySelector("#mdbook-searchresults-header");
    const list = wrapper.querySelector("#mdbook-searchresults");

    const show = (open) => {
      wrapper.classList.toggle("hidden", !open);
      toggle.setAttribute("aria-expanded", String(open));
      if (open) {
        input.focus();
        input.select();
        run();
      }
    };
    const run = async () => {
      const query = input.value.trim();
      if (query === "") {
        outer.classList.add("hidden");
        return;
      }
      let index;
      try {
        index = await loadIndex();
      } catch {
        loading = null; // the next keystroke tries again
        header.textContent = words.failed;
        list.replaceChildren();
        outer.classList.remove("hidden");
        return;
      }
      if (input.value.trim() !== query) return; // typed on meanwhile
      const results = search(index, query);
      const terms = termsOf(query);
      const shown = Math.min(results.length, MAX_RESULTS);
      header.textContent = results.length > 0
        ? words.found(shown, results.length, query)
        : words.none(query);
      list.innerHTML = results.slice(0, MAX_RESULTS)
        .map((r) => resultItem(r, query, terms)).join("");
      outer.classList.remove("hidden");
    };

    toggle.addEventListener("click", () =>
      show(wrapper.classList.contains("hidden")));
    input.addEventListener("input", run);
    wrapper.querySelector("form").addEventListener("submit", async (e) => {
      e.preventDefault();
      await run();
      list.querySelector("a")?.click();
    });
    document.addEventListener("keydown", (e) => {
      if (e.altKey || e.ctrlKey || e.metaKey || e.shiftKey) return;
      const typing = /^(INPUT|TEXTAREA|SELECT)$/.test(e.target.tagName);
      if (e.key === "Escape" && !wrapper.classList.contains("hidden")) {
        show(false);
      } else if (!typing && (e.key === "s" || e.key === "/")) {
        e.preventDefault();
        show(true);
      }
    });
    return input;
  }

  // On a page opened from a result: each match in the text marked, and
  // the first one after the result's heading scrolled to. A click on a
  // mark removes the marks.
  function highlight(query, ordinal) {
    const terms = termsOf(query);
    const main = document.querySelector("main");
    if (!main || terms.length === 0) return;
    const walker = document.createTreeWalker(main, NodeFilter.SHOW_TEXT, {
      acceptNode: (node) =>
        node.parentElement.closest("pre, script, style, .katex, mark")
          ? NodeFilter.FILTER_REJECT
          : NodeFilter.FILTER_ACCEPT,
    });
    const nodes = [];
    while (walker.nextNode()) nodes.push(walker.currentNode);
    const marks = [];
    for (const node of nodes) {
      const html = emphasise(node.data, terms);
      if (!html.includes("<em>")) continue;
      const span = document.createElement("span");
      span.innerHTML = html.replaceAll("<em>", '<mark class="search-match">')
        .replaceAll("</em>", "</mark>");
      marks.push(...span.querySelectorAll("mark"));
      node.replaceWith(...span.childNodes);
    }
    const headings = main.querySelectorAll("h1, h2, h3, h4, h5, h6");
    const heading = headings[ordinal] ?? headings[0];
    const target = marks.find((m) => heading &&
      heading.compareDocumentPosition(m) & Node.DOCUMENT_POSITION_FOLLOWING) ?? marks[0];
    // a match in a collapsed solution: the solution opens
    for (let d = target?.closest("details"); d; d = d.parentElement.closest("details")) {
      d.open = true;
    }
    target?.scrollIntoView({ block: "center" });
    const unmark = () => marks.forEach((m) => m.replaceWith(m.textContent));
    marks.forEach((m) => m.addEventListener("click", unmark));
  }

  const input = setUpBar();
  const params = new URLSearchParams(location.search);
  const query = params.get("search");
  if (query) {
    highlight(query, Number(params.get("section") ?? 0));
    input.value = query; // opening the search shows the query again
  }
})();
