#pragma once
// One self-contained HTML report: inline CSS and inline SVG, no scripts, nothing fetched from
// the network. The document is XHTML-compatible (well-formed XML), so XML tools can check it.
// Charts shrink to the width of the window; printed, every block stays whole on its page, charts
// take the page's width and wide tables wrap their cells.

#include <string>
#include <vector>

namespace stepsim::report {

struct HtmlSection {
  std::string heading;                 // plain text (escaped here)
  std::string note;                    // plain text under the heading, may be empty
  std::vector<std::string> blocks;     // ready-made markup: tables, <svg> elements
  bool side_by_side = false;           // lay the blocks out in a row (wrapping when narrow)
};

[[nodiscard]] std::string html_document(const std::string& title, const std::string& subtitle,
                          const std::vector<HtmlSection>& sections, const std::string& footer);

}  // namespace stepsim::report
