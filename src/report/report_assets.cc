#include "report/report_assets.h"

#include <cstdlib>

#include "base/files.h"
#include "report/html.h"

namespace kforge {

namespace fs = std::filesystem;

std::string ReportAssets::Libraries(bool with_highlight) const {
  std::string out = "<script>\n" + InlineScript(chart_js) + "\n</script>\n";
  if (with_highlight)
    out += "<style>\n" + highlight_css + "\n</style>\n<script>\n" + InlineScript(highlight_js) +
           "\n</script>\n";
  return out;
}

fs::path JavaScriptDir() {
  const char* env = std::getenv("KFORGE_JAVASCRIPT_DIR");
  return env && *env ? fs::path(env) : fs::path("/usr/share/javascript");
}

namespace {

Result<std::string> ReadAsset(const fs::path& file, const char* package) {
  if (!fs::exists(file))
    return Status::NotFound(
        file.string() + " is missing: reports inline " + package +
        "; install it with `apt install libjs-chart.js libjs-highlight.js` (or scripts/setup)");
  return ReadFile(file);
}

}  // namespace

Result<ReportAssets> LoadReportAssets(const fs::path& dir) {
  ReportAssets a;
  KF_ASSIGN_OR_RETURN(a.chart_js, ReadAsset(dir / "chart.js" / "chart.min.js",
                                            "Chart.js (Debian's libjs-chart.js)"));
  KF_ASSIGN_OR_RETURN(a.highlight_js, ReadAsset(dir / "highlight.js" / "highlight.min.js",
                                                "highlight.js (Debian's libjs-highlight.js)"));
  KF_ASSIGN_OR_RETURN(a.highlight_css, ReadAsset(dir / "highlight.js" / "styles" / "github.css",
                                                 "highlight.js (Debian's libjs-highlight.js)"));
  return a;
}

}  // namespace kforge
