//! Plain fixed-width text tables: a header row, right-aligned numeric columns.

/// A table of string cells. The first column is left-aligned; every other column is
/// right-aligned when all its cells look numeric, left-aligned otherwise.
#[derive(Debug, Clone, Default)]
pub struct Table {
    header: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl Table {
    pub fn new<S: Into<String>>(header: impl IntoIterator<Item = S>) -> Table {
        Table { header: header.into_iter().map(Into::into).collect(), rows: Vec::new() }
    }

    pub fn row<S: Into<String>>(&mut self, cells: impl IntoIterator<Item = S>) {
        let row: Vec<String> = cells.into_iter().map(Into::into).collect();
        assert_eq!(row.len(), self.header.len(), "row width must match the header");
        self.rows.push(row);
    }

    pub fn render(&self) -> String {
        let n = self.header.len();
        let widths: Vec<usize> = (0..n)
            .map(|c| self.rows.iter().map(|r| r[c].len()).chain([self.header[c].len()]).max().unwrap_or(0))
            .collect();
        let numeric = |c: usize| {
            self.rows
                .iter()
                .all(|r| r[c].chars().next().is_none_or(|ch| ch.is_ascii_digit() || "-+.(".contains(ch)))
        };
        let right: Vec<bool> = (0..n).map(|c| c > 0 && numeric(c)).collect();
        let mut out = String::new();
        for row in std::iter::once(&self.header).chain(&self.rows) {
            let mut line = String::new();
            for (c, cell) in row.iter().enumerate() {
                if c > 0 && !right[c] {
                    line.push_str(&format!("  {cell:<w$}", w = widths[c]));
                } else if c == 0 {
                    line.push_str(&format!("{cell:<w$}", w = widths[c]));
                } else {
                    line.push_str(&format!("  {cell:>w$}", w = widths[c]));
                }
            }
            out.push_str(line.trim_end());
            out.push('\n');
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aligns_columns() {
        let mut t = Table::new(["level", "hits", "misses"]);
        t.row(["L1 DTLB", "12", "3"]);
        t.row(["STLB", "3", "1000"]);
        assert_eq!(t.render(), "level    hits  misses\nL1 DTLB    12       3\nSTLB        3    1000\n");
    }

    #[test]
    fn text_columns_align_left() {
        let mut t = Table::new(["name", "what"]);
        t.row(["a", "long text"]);
        t.row(["bb", "x"]);
        assert_eq!(t.render(), "name  what\na     long text\nbb    x\n");
    }

    #[test]
    #[should_panic(expected = "row width")]
    fn rejects_ragged_rows() {
        Table::new(["a", "b"]).row(["x"]);
    }
}
