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
