#include "report/html.h"

#include <gtest/gtest.h>

#include "report/page_test_util.h"
#include "report/report_assets.h"

namespace kforge {
namespace {

using nlohmann::json;

TEST(HtmlEscapeTest, GivenMarkupCharactersItReturnsCharacterReferences) {
  EXPECT_EQ(HtmlEscape("a < b && c > \"d\" 'e'"),
            "a &lt; b &amp;&amp; c &gt; &quot;d&quot; &#39;e&#39;");
  EXPECT_EQ(HtmlEscape("</script><img src=x onerror=alert(1)>"),
            "&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;");
  EXPECT_EQ(HtmlEscape("plain text, ünïcode"), "plain text, ünïcode");
}

TEST(ScriptJsonTest, GivenAClosingScriptTagInAStringItCannotEndTheElement) {
  json data = {{"answer", "</script><script>alert(1)</script><!-- & -->"}};
  const std::string text = ScriptJson(data);
  EXPECT_EQ(text.find('<'), std::string::npos);
  EXPECT_EQ(text.find('>'), std::string::npos);
  EXPECT_EQ(text.find('&'), std::string::npos);
  EXPECT_EQ(json::parse(text), data);  // JSON.parse reads the same back
}

TEST(ScriptJsonTest, GivenLineSeparatorsAndInvalidUtf8ItStillGivesParsableJson) {
  json data = {{"s",
                "a\xE2\x80\xA8"
                "b\xE2\x80\xA9"
                "c"},
               {"cut", std::string("x\xC3", 2)}};
  const std::string text = ScriptJson(data);
  EXPECT_NE(text.find("\\u2028"), std::string::npos);
  EXPECT_NE(text.find("\\u2029"), std::string::npos);
  json back = json::parse(text);
  EXPECT_EQ(back["s"], data["s"]);
  EXPECT_EQ(back["cut"], "x\xEF\xBF\xBD");  // U+FFFD for the cut sequence
}

TEST(InlineScriptTest, GivenALibraryHoldingScriptEndTagsItEscapesThemInAnyCase) {
  EXPECT_EQ(InlineScript("var s = '</script>'; var t = \"</SCRIPT\"; // <!-- x"),
            "var s = '<\\/script>'; var t = \"<\\/SCRIPT\"; // <\\!-- x");
  EXPECT_EQ(InlineScript("a < b && c</scrip"), "a < b && c</scrip");
}

TEST(RenderPageTest, GivenDataAndHostileTitleThePageEmbedsBothSafely) {
  HtmlPage page;
  page.title = "</title><script>alert(1)</script>";
  page.body = "<p>body</p>";
  page.data = {{"attempts", {{{"status", "</script><script>alert(2)</script>"}}}}};
  page.page_js = "/*page*/";
  page.libraries = "<script>/*lib*/</script>\n";
  const std::string html = RenderPage(page);
  // The library, the data and the page's script: nothing hostile opened a fourth.
  EXPECT_EQ(Count(html, "<script"), 3u);
  EXPECT_EQ(Count(html, "</script>"), 3u);
  EXPECT_NE(html.find("<title>&lt;/title&gt;&lt;script&gt;alert(1)&lt;/script&gt;</title>"),
            std::string::npos);
  EXPECT_EQ(json::parse(EmbeddedData(html)), page.data);
  EXPECT_NE(html.find(kReportCommonJs), std::string::npos);
  EXPECT_NE(html.find("/*page*/"), std::string::npos);
  // Nothing is fetched: no URL the browser would load.
  EXPECT_EQ(html.find("src=\"http"), std::string::npos);
  EXPECT_EQ(html.find("href=\"http"), std::string::npos);
}

TEST(ReportAssetsTest, GivenAFolderWithoutTheLibrariesItSaysWhatToInstall) {
  Result<ReportAssets> a = LoadReportAssets("/nonexistent-kforge-js");
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.status().code(), StatusCode::kNotFound);
  EXPECT_NE(a.status().message().find("apt install libjs-chart.js libjs-highlight.js"),
            std::string::npos);
  EXPECT_NE(a.status().message().find("/nonexistent-kforge-js/chart.js/chart.min.js"),
            std::string::npos);
}

TEST(ReportAssetsTest, GivenDebiansPackagesInstalledItReadsBothLibraries) {
  Result<ReportAssets> a = LoadReportAssets("/usr/share/javascript");
  if (!a.ok())
    GTEST_SKIP()
        << "libjs-chart.js / libjs-highlight.js not installed (scripts/setup installs them): "
        << a.status().message();
  EXPECT_NE(a->chart_js.find("Chart.js v3"), std::string::npos);
  EXPECT_NE(a->highlight_js.find("hljs"), std::string::npos);
  const std::string libs = a->Libraries();
  EXPECT_EQ(Count(libs, "</script>"), 2u);  // neither library ends its element early
  EXPECT_EQ(Count(a->Libraries(false), "</script>"), 1u);
}

}  // namespace
}  // namespace kforge
