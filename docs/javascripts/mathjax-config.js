// MathJax 3 reads the \( \) and \[ \] that pymdownx.arithmatex (generic mode) leaves in the page.
// The script itself (tex-svg-full.js: every TeX extension, SVG output, no web fonts) is copied into
// the site at build time from the sphinx-mathjax-offline package (docs/hooks.py), so the docs
// render their equations offline.
window.MathJax = {
  tex: {
    inlineMath: [["\\(", "\\)"]],
    displayMath: [["\\[", "\\]"]],
    processEscapes: true,
    processEnvironments: true,
  },
  options: {
    ignoreHtmlClass: ".*|",
    processHtmlClass: "arithmatex",
  },
};
