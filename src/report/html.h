// HTML building blocks for kforge's reports: escaping, data embedded for scripts, and the page
// skeleton every report shares (src/report/run_report.h, bench_html.h; docs/report.md).
//
// Everything a report shows from the run store or a bench file is hostile text: a model's answer
// or a candidate's source may hold `</script>`, `<img onerror=...>` or invalid UTF-8. It reaches
// the page only through HtmlEscape (markup) or ScriptJson (data for the page's scripts); the
// scripts insert text with textContent, never as markup.
//
// Thread-safety: free functions without shared state.
#ifndef KFORGE_REPORT_HTML_H_
#define KFORGE_REPORT_HTML_H_

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace kforge {

// `text` with & < > " ' as character references: safe in element content and in quoted
// attribute values. Invalid UTF-8 is passed through (the browser shows U+FFFD for it).
std::string HtmlEscape(std::string_view text);

// `data` as JSON for a <script type="application/json"> element: <, > and & as \u003c, \u003e,
// \u0026 (so no `</script>` or `<!--` can end or bend the element) and U+2028/U+2029 escaped;
// invalid UTF-8 in strings becomes U+FFFD instead of failing. JSON.parse reads it back
// unchanged.
std::string ScriptJson(const nlohmann::json& data);

// A trusted script (an inlined library) made safe to sit inside <script>...</script>: `</script`
// and `<!--` (any case) become `<\/script` and `<\!--`, which mean the same in JavaScript
// strings and regular expressions, where such text can occur.
std::string InlineScript(std::string_view js);

// The parts of a self-contained report page.
struct HtmlPage {
  std::string title;      // plain text; escaped here
  std::string body;       // markup, already escaped where it holds data
  nlohmann::json data;    // embedded as <script type="application/json" id="kforge-data">
  std::string page_js;    // the report's own script, run after the libraries
  std::string libraries;  // <script>/<style> elements of the inlined libraries (report_assets.h)
  // The Content-Security-Policy: by default no request may leave the page (a report is read
  // offline, and a hostile string that slipped through would find nothing to load).
  std::string csp = "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:";
};

// One HTML document: the shared style sheet, the libraries, the body, the data, then page_js.
// Nothing in it refers to another file or to the network.
std::string RenderPage(const HtmlPage& page);

// <tr><th>key</th><td>value</td></tr> with both escaped: the summaries' key/value tables.
std::string KeyValueRow(std::string_view key, std::string_view value);

}  // namespace kforge

#endif  // KFORGE_REPORT_HTML_H_
