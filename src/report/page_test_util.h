// What the report tests read out of a rendered page (html_test.cc, run_report_test.cc).
#ifndef KFORGE_REPORT_PAGE_TEST_UTIL_H_
#define KFORGE_REPORT_PAGE_TEST_UTIL_H_

#include <cstddef>
#include <string>

namespace kforge {

// The text between <script type="application/json" id="kforge-data"> and its </script>.
inline std::string EmbeddedData(const std::string& html) {
  const std::string open = "<script type=\"application/json\" id=\"kforge-data\">";
  size_t begin = html.find(open);
  if (begin == std::string::npos) return "";
  begin += open.size();
  return html.substr(begin, html.find("</script>", begin) - begin);
}

// How often `what` occurs in `text`, overlaps included.
inline size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

}  // namespace kforge

#endif  // KFORGE_REPORT_PAGE_TEST_UTIL_H_
