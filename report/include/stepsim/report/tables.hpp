#pragma once
// Plain tables (caption, columns, preformatted cells) and their writers: Markdown, CSV, LaTeX
// (booktabs) and HTML. Cells are strings formatted once by the caller, so every writer prints the
// same numbers.

#include <string>
#include <vector>

namespace stepsim::report {

struct Table {
  std::string caption;                         // one line: what the table shows
  std::string label;                           // LaTeX \label ("tab:stepsim-metrics"); empty: none
  std::vector<std::string> columns;
  std::vector<bool> right_aligned;             // per column; missing entries: left-aligned
  std::vector<std::vector<std::string>> rows;  // each row has columns.size() cells
};

// LaTeX text escape: \ & % $ # _ { } ~ ^ and the ASCII characters LaTeX treats specially.
[[nodiscard]] std::string latex_escape(const std::string& text);
// CSV field: quoted (with doubled quotes) when it holds a comma, a quote or a line break.
[[nodiscard]] std::string csv_field(const std::string& text);
// XML/HTML text and attribute escape: & < > " '.
[[nodiscard]] std::string xml_escape(const std::string& text);

// Padded: cells filled to the column width; Compact: one space around each cell.
enum class MarkdownStyle { Padded, Compact };
// "**caption**" line and a blank line (when there is a caption), then a pipe table with
// alignment markers.
[[nodiscard]] std::string to_markdown(const Table& t, MarkdownStyle style = MarkdownStyle::Padded);
// Header line, then one line per row (no caption: callers put it in a comment line).
[[nodiscard]] std::string to_csv(const Table& t);
// A table environment with \caption, tabular with booktabs rules.
[[nodiscard]] std::string to_latex(const Table& t);
// LaTeX tables after two comment lines: the provenance and the packages they need.
[[nodiscard]] std::string latex_tables(const std::string& provenance, const std::vector<Table>& tables);
// <table> with <caption>, <thead> and <tbody> (XHTML-compatible).
[[nodiscard]] std::string to_html(const Table& t);

// The table with only `columns`, in that order; throws ScenarioError("--columns", ...) naming
// a column it does not have (and the ones it has). Empty `columns`: the table as it is.
[[nodiscard]] Table select_columns(const Table& t, const std::vector<std::string>& columns);

// Columns of a table above which LaTeX output uses tabularx at \linewidth (and \small).
inline constexpr std::size_t kLatexWideColumns = 8;

}  // namespace stepsim::report
