/* The sidebar buttons on narrow screens.
 *
 * Below 992 px the chapter list and the page contents open from buttons in the article
 * header. pydata-sphinx-theme 0.17 binds its click handler to the *first*
 * .primary-toggle / .secondary-toggle in the page only (document.querySelector), which
 * is a header button that sphinx-book-theme hides, so the visible buttons did nothing.
 * Every other toggle forwards its click to the first one, which opens the dialog.
 */
document.addEventListener("DOMContentLoaded", () => {
  for (const kind of ["primary-toggle", "secondary-toggle"]) {
    const [first, ...others] = document.querySelectorAll("." + kind);
    for (const button of others) {
      button.addEventListener("click", (event) => {
        event.preventDefault();
        event.stopPropagation();
        first.click();
      });
    }
  }
});

/* Scrollable code blocks and outputs take keyboard focus, so that a keyboard can scroll
 * them. pydata-sphinx-theme decides this for every block of the page once it has loaded,
 * which lays out the whole chapter (tools/jaxguide_site.py removes that pass). Here a
 * block is measured when it comes near the screen, where it is laid out anyway: the work
 * grows with what the reader sees, not with the chapter's length. Until then a <pre>
 * keeps the tabindex="0" the build gave it; measured, a block that does not scroll
 * leaves the tab order, as the theme would do.
 */
document.addEventListener("DOMContentLoaded", () => {
  const selector = "pre, .nboutput > .output_area, .cell_output > .output, " +
    ".jp-RenderedHTMLCommon, .pst-scrollable-table-container";
  const measure = (el) => {
    el.tabIndex = el.scrollWidth > el.clientWidth || el.scrollHeight > el.clientHeight ? 0 : -1;
  };
  const observer = new IntersectionObserver((entries) => {
    for (const entry of entries) {
      if (entry.isIntersecting) measure(entry.target);
    }
  }, { rootMargin: "200px 0px" });
  const blocks = document.querySelectorAll(selector);
  blocks.forEach((el) => observer.observe(el));
  // The width changed: measure again what is near the screen (the observer re-reports
  // only what enters or leaves it).
  let timer = null;
  window.addEventListener("resize", () => {
    clearTimeout(timer);
    timer = setTimeout(() => {
      blocks.forEach((el) => observer.unobserve(el));
      blocks.forEach((el) => observer.observe(el));
    }, 300);
  });
});
