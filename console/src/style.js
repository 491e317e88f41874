// adopt applies a stylesheet given as text (esbuild bundles each imported
// .css file as its minified text, see console/build.mjs) as a constructed
// stylesheet: no <link> that blocks the first render, and nothing inline
// for the CSP (style-src 'self') to refuse.
export function adopt(css) {
  const sheet = new CSSStyleSheet();
  sheet.replaceSync(css);
  document.adoptedStyleSheets = [...document.adoptedStyleSheets, sheet];
}
