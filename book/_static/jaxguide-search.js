/* Search ranking and snippets (configured as html_search_scorer in _config.yml; Sphinx
 * copies this code into language_data.js, which loads after searchtools.js).
 *
 * Ranking. Sphinx scores a page 15 when a searched word is in *any* of its headings and
 * breaks ties by name, so "vmap" listed pages with a section on it before the chapter
 * that teaches it. Here a page whose own title names the word comes first, more so when
 * the title shows it as code (the API the chapter teaches: `vmap`, `shard_map`); a
 * heading that names it as code comes next; a mere mention last.
 *
 * Snippets. Sphinx cuts the snippet from the page's [role="main"] element, which starts
 * with the page chrome (buttons, the title bar, the contents list); the snippet of
 * "shard_map" was that chrome. Here it comes from the article's text after its title.
 */
var Scorer = {
  score: (result) => {
    const [docname, title, anchor, descr, score, filename] = result;
    const words = jaxguideSearchWords();
    if (!words.length) return score;
    // The page's title (HTML); a section result's title reads "Page > Section".
    const pageTitle = (title || "").split(" &gt; ")[0].split(" > ")[0];
    // The code spans of the page title, e.g. "vmap" in "Transformations: jit, vmap ...".
    const codeWords = jaxguideCodeText(pageTitle);
    const plainTitle = jaxguideWords(pageTitle.replace(/<[^>]*>/g, ""));
    let boost = 0;
    for (const word of words) {
      if (codeWords.includes(word)) boost = Math.max(boost, 60);
      else if (plainTitle.includes(word)) boost = Math.max(boost, 40);
    }
    // A result for one section of the page: behind the page itself.
    if (anchor) boost -= 1;
    return score + boost;
  },
  objNameMatch: 11,
  objPartialMatch: 6,
  objPrio: { 0: 15, 1: 5, 2: -5 },
  objPrioDefault: 0,
  title: 15,
  partialTitle: 7,
  term: 5,
  partialTerm: 2,
};

/* The searched words, lower case (the search page's ?q=...). */
function jaxguideSearchWords() {
  const query = new URLSearchParams(window.location.search).get("q") || "";
  return jaxguideWords(query);
}

function jaxguideWords(text) {
  return text.toLowerCase().split(/[^\p{L}\p{N}_.]+/u).filter(Boolean)
    .flatMap((w) => [w, w.split(".").pop()]);
}

function jaxguideCodeText(html) {
  const found = [];
  for (const match of html.matchAll(/<code[^>]*>([\s\S]*?)<\/code>/g)) {
    found.push(...jaxguideWords(match[1].replace(/<[^>]*>/g, "")));
  }
  return found;
}

/* The snippet's text: the article without its title and provenance box, or the
   section the result points to. */
function jaxguideHtmlToText(htmlString, anchor) {
  const doc = new DOMParser().parseFromString(htmlString, "text/html");
  for (const query of [".headerlink", "script", "style", ".jaxguide-provenance"]) {
    doc.querySelectorAll(query).forEach((el) => el.remove());
  }
  if (anchor) {
    const section = doc.querySelector(`[role="main"] ${anchor}`);
    if (section) return section.textContent;
  }
  const article = doc.querySelector("article.bd-article") || doc.querySelector('[role="main"]');
  if (!article) return "";
  const heading = article.querySelector("h1");
  if (heading) heading.remove();
  return article.textContent;
}

if (typeof Search !== "undefined") Search.htmlToText = jaxguideHtmlToText;
document.addEventListener("DOMContentLoaded", () => {
  if (typeof Search !== "undefined") Search.htmlToText = jaxguideHtmlToText;
});
