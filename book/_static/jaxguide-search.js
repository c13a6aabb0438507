/* The search page (search.html; tools/jaxguide_build/site/search.py puts this script on
 * it, and on no other page). The index is Pagefind's, one record per section of the
 * book, in pagefind/: it and Pagefind's script load only when a reader searches.
 *
 * Pagefind returns the records that hold every word of a query. A reader's query often
 * has a word the answering section lacks, so each word is searched on its own and a
 * section scores the sum of its words' Pagefind scores, times the share of the query's
 * words it holds (to the power coverage): a missing word lowers a section, it does not
 * empty the list. A word is searched in several forms, its best form counting:
 *   - an API name as typed (tree_leaves, jax.tree.leaves, IndivisibleError): its
 *     letters joined, as Pagefind indexes the name, and its parts, all required;
 *   - an old name of the migration appendix's table (pagefind/jaxguide-aliases.json):
 *     the names that replace it;
 *   - a plain word with the negating prefix in- (divisible: indivisible), weighed less,
 *     where the book has that word (the table's "negated").
 * A section that a question list (the Questions page, a chapter's "Questions readers
 * ask") links to, found by the same query, ranks at least lift times the list's score:
 * the answer above the question (the table's "answers", by Pagefind id).
 * SETTINGS were tuned with bench/search.py on bench/search_queries.yml.
 * window.jaxguideSearch exposes the search for that bench and the browser tests. */
(() => {
  "use strict";
  const SETTINGS = {
    ranking: { termFrequency: 0.5, termSaturation: 1.4, pageLength: 0.25, termSimilarity: 1.0,
               metaWeights: { title: 1.0, page: 0.0 } },
    coverage: 1,        // the share of the query's words a section holds, to this power
    negated: 0.5,       // weight of a word's negated form (in-)
    lift: 1.01,         // a section linked from a questions list: at least its score times this
    shown: 10,          // results shown
  };
  const STOP = new Set(("a an and are as at be but by can do does doing for from get gets got " +
    "has have how i if in into is it its me my no not of on or so than that the then there " +
    "this to use using was what when where which while why will with without you your").split(" "));
  const root = document.documentElement.dataset.content_root || "./";
  const bundle = new URL(root + "pagefind/", location.href).href;
  let pagefind = null;  // a promise of Pagefind's module, once a reader searches
  let aliases = null;   // a promise of the old names' table
  let negated = new Set();  // the book's in- words (indivisible)
  let answers = new Map();  // a questions list's Pagefind id: the ids of the sections it links to
  const loaded = new Map(); // a section's data, by Pagefind's id (excerpts of its first query)

  // Pagefind and the tables beside its index, loaded side by side.
  async function load() {
    // A failed load is tried again at the next search.
    if (!pagefind) pagefind = loadPagefind().catch((err) => { pagefind = null; throw err; });
    if (!aliases) aliases = loadTables();
    await Promise.all([pagefind, aliases]);
  }
  async function loadPagefind() {
    const module = await import(bundle + "pagefind.js");
    // On the page's thread: Pagefind 1.5's web worker left one query in a hundred
    // waiting 4 to 8 s in headless Chromium (bench/search.py); a search takes some ms.
    await module.options({ ranking: SETTINGS.ranking, excerptLength: 26, noWorker: true });
    await module.init();
    return module;
  }
  async function loadTables() {
    const found = new Map();
    try {
      const tables = await (await fetch(bundle + "jaxguide-aliases.json")).json();
      for (const [old, names] of Object.entries(tables.aliases)) {
        for (const key of aliasKeys(old)) found.set(key, names);
      }
      negated = new Set(tables.negated);
      answers = new Map(Object.entries(tables.answers));
    } catch (err) { /* no tables: words are searched as typed */ }
    return found;
  }

  const letters = (s) => s.toLowerCase().replace(/[^a-z0-9]/g, "");
  const parts = (s) => s.replace(/([a-z0-9])([A-Z])/g, "$1 $2")
    .split(/[^A-Za-z0-9]+/).filter((p) => p.length > 1).map((p) => p.toLowerCase());
  // An old name is known by its letters, without a leading "jax", and by its last part.
  function aliasKeys(name) {
    const keys = new Set([letters(name).replace(/^jax(?=.)/, "")]);
    const last = name.split(".").pop();
    if (letters(last).length >= 4) keys.add(letters(last));
    return keys;
  }

  // The query's words, each with the forms it is searched in: [{text, weight}].
  function words(query, aliases) {
    const found = [];
    for (const raw of query.split(/\s+/)) {
      const word = raw.replace(/^[^A-Za-z0-9_]+|[^A-Za-z0-9_]+$/g, "");
      if (!word) continue;
      const forms = new Map();
      const add = (text, weight) => { if (text && !(forms.get(text) >= weight)) forms.set(text, weight); };
      const split = parts(word);
      add(letters(word), 1);
      add(word.toLowerCase().replace(/[^a-z0-9_]/g, ""), 1); // Pagefind keeps "_" in words
      if (split.length > 1) add(split.join(" "), 1);
      const renamed = aliases.get(letters(word).replace(/^jax(?=.)/, "")) || aliases.get(letters(word));
      for (const name of renamed || []) add(parts(name).filter((p) => p !== "jax").join(" "), 1);
      // Only the in- words the book has: Pagefind answers a word it lacks with every
      // word of its longest indexed prefix ("inleaked": thousands of words from "in"),
      // which is noise, and slow.
      if (split.length === 1 && negated.has("in" + word.toLowerCase())) {
        add("in" + word.toLowerCase(), SETTINGS.negated);
      }
      found.push({ word: word.toLowerCase(), forms: [...forms].map(([text, weight]) => ({ text, weight })) });
    }
    const kept = found.filter((w) => !STOP.has(w.word));
    return kept.length ? kept : found;
  }

  // Sections ranked for the query: [{id, score, result}], best first.
  async function rank(query) {
    await load();
    const pf = await pagefind;
    const query_words = words(query, await aliases);
    // Every index chunk the query's words need, fetched at once, before the searches.
    await pf.preload(query_words.flatMap((w) => w.forms.map((f) => f.text)).join(" "));
    const scores = new Map();
    for (const word of query_words) {
      const best = new Map();
      for (const form of word.forms) {
        const search = await pf.search(form.text);
        for (const result of search.results) {
          const score = form.weight * result.score;
          if (!(best.get(result.id)?.score >= score)) best.set(result.id, { score, result });
        }
      }
      for (const [id, { score, result }] of best) {
        const entry = scores.get(id) || { id, score: 0, words: 0, result };
        entry.score += score;
        entry.words += 1;
        scores.set(id, entry);
      }
    }
    const n = query_words.length || 1;
    const ranked = [...scores.values()]
      .map((e) => ({ ...e, own: e.score * Math.pow(e.words / n, SETTINGS.coverage) }));
    // A questions list ranks below the sections it links to that the query found.
    const byId = new Map();
    for (const e of ranked) { e.score = e.own; byId.set(e.id, e); }
    for (const e of ranked) {
      for (const target of answers.get(e.id) || []) {
        const t = byId.get(target);
        if (t) t.score = Math.max(t.score, e.own * SETTINGS.lift);
      }
    }
    return ranked.sort((a, b) => b.score - a.score || b.own - a.own || (a.id < b.id ? -1 : 1));
  }

  // The shown results: [{url, title, page, excerpt}], url relative to this page.
  async function search(query) {
    const ranked = await rank(query);
    const shown = await Promise.all(ranked.slice(0, SETTINGS.shown).map((e) => {
      if (!loaded.has(e.id)) loaded.set(e.id, e.result.data());
      return loaded.get(e.id);
    }));
    return shown.map((d) => ({
      url: root + (d.meta.url || d.url.replace(/^\//, "")),
      title: d.meta.title || d.url,
      page: d.meta.page || "",
      excerpt: d.excerpt,
    }));
  }

  function render(container, status, query, results) {
    container.replaceChildren();
    status.textContent = results.length
      ? `${results.length === SETTINGS.shown ? "The best " : ""}${results.length} section${results.length === 1 ? "" : "s"} for “${query}”`
      : `No section matches “${query}”.`;
    const list = document.createElement("ol");
    list.className = "jaxguide-search-results";
    for (const r of results) {
      const item = document.createElement("li");
      const link = document.createElement("a");
      link.href = r.url;
      link.textContent = r.title;
      const heading = document.createElement("h2");
      heading.append(link);
      item.append(heading);
      if (r.page && r.page !== r.title) {
        const page = document.createElement("p");
        page.className = "jaxguide-search-page";
        page.textContent = r.page;
        item.append(page);
      }
      const excerpt = document.createElement("p");
      excerpt.className = "jaxguide-search-excerpt";
      excerpt.innerHTML = r.excerpt; // Pagefind escapes the text and adds only <mark>
      item.append(excerpt);
      list.append(item);
    }
    container.append(list);
  }

  let latest = 0;
  async function run(query, container, status) {
    const id = ++latest;
    const start = performance.now();
    if (!query.trim()) { container.replaceChildren(); status.textContent = ""; return; }
    status.textContent = "Searching…";
    let results;
    try {
      results = await search(query);
    } catch (err) {
      if (id === latest) status.textContent = "The search failed: " + err;
      document.dispatchEvent(new CustomEvent("jaxguide-search-done", { detail: { query, error: String(err), results: [] } }));
      throw err;
    }
    if (id !== latest) return;
    render(container, status, query, results);
    window.jaxguideSearch.last = { query, ms: performance.now() - start, results };
    document.dispatchEvent(new CustomEvent("jaxguide-search-done", { detail: window.jaxguideSearch.last }));
  }

  window.jaxguideSearch = {
    SETTINGS, search, rank, words: async (q) => { await load(); return words(q, await aliases); },
    // For bench/search.py: other settings, ranking included.
    configure: async (settings) => {
      Object.assign(SETTINGS, settings);
      if (settings.ranking && pagefind) await (await pagefind).options({ ranking: settings.ranking });
    },
    last: null,
  };

  document.addEventListener("DOMContentLoaded", () => {
    const form = document.querySelector(".bd-search-container form.bd-search");
    const input = form && form.querySelector("input[name=q]");
    if (!input) return;
    const status = document.createElement("p");
    status.className = "jaxguide-search-status";
    status.setAttribute("role", "status");
    const container = document.createElement("div");
    // Beside the theme's #search-results, not in it: the theme hides an h2 there.
    form.parentElement.append(status, container);
    const query = new URLSearchParams(location.search).get("q") || "";
    input.value = query;
    const go = () => {
      const q = input.value;
      const url = new URL(location.href);
      url.searchParams.set("q", q);
      history.replaceState(null, "", url);
      run(q, container, status);
    };
    form.addEventListener("submit", (event) => { event.preventDefault(); go(); });
    let timer = null;
    input.addEventListener("input", () => { clearTimeout(timer); timer = setTimeout(go, 250); });
    if (query) run(query, container, status);
  });
})();
