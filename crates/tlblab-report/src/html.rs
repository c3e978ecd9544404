//! A self-contained HTML page of sections: headings, paragraphs, preformatted tables, HTML
//! tables and plots (as `<img>` of SVG files written beside the page, each linked to its PNG).
//!
//! The page marks `<body data-plots-loaded="N">` once every image has loaded (N = how many), or
//! `data-plots-failed` if one did not, so a headless browser can check what a reader would see.

use std::fmt::Write;

#[derive(Debug, Clone, PartialEq)]
pub enum Block {
    Paragraph(String),
    /// Monospaced text (the mmtests-style tables).
    Pre(String),
    /// A header row and body rows; cells are plain text.
    Table {
        header: Vec<String>,
        rows: Vec<Vec<String>>,
    },
    /// An image file relative to the page, with a caption; `png` optionally links a PNG copy.
    Plot {
        src: String,
        png: Option<String>,
        caption: String,
        /// The image's width in pixels (a wide chart is wider than the usual 720).
        width: u32,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub struct Section {
    pub heading: String,
    pub blocks: Vec<Block>,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct Page {
    pub title: String,
    pub sections: Vec<Section>,
}

pub fn escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

const STYLE: &str = "body{font-family:'DejaVu Sans',Arial,sans-serif;margin:24px;color:#222;background:#fff}\
h1{font-size:22px}h2{font-size:18px;border-bottom:1px solid #ccc;padding-bottom:4px;margin-top:32px}\
pre{background:#f6f6f6;padding:10px;overflow-x:auto;font-size:12px;line-height:1.35}\
table{border-collapse:collapse;font-size:13px}td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}\
th{background:#eee}td:first-child,th:first-child{text-align:left}\
figure{display:inline-block;margin:8px 16px 8px 0}figcaption{font-size:12px;color:#555}\
img{border:1px solid #ddd;max-width:100%;height:auto}";

/// Marks the body once every image has finished loading (successfully or not).
const SCRIPT: &str = "(function(){var imgs=Array.prototype.slice.call(document.images);\
function check(){var done=imgs.every(function(i){return i.complete;});if(!done)return;\
var bad=imgs.filter(function(i){return !(i.naturalWidth>0);});\
if(bad.length){document.body.setAttribute('data-plots-failed',bad.map(function(i){return i.getAttribute('src');}).join(' '));}\
else{document.body.setAttribute('data-plots-loaded',String(imgs.length));}}\
imgs.forEach(function(i){i.addEventListener('load',check);i.addEventListener('error',check);});\
check();})();";

impl Page {
    pub fn new(title: impl Into<String>) -> Page {
        Page { title: title.into(), sections: Vec::new() }
    }

    pub fn section(&mut self, heading: impl Into<String>, blocks: Vec<Block>) {
        self.sections.push(Section { heading: heading.into(), blocks });
    }

    /// How many plots the page shows.
    pub fn plots(&self) -> usize {
        self.sections.iter().flat_map(|s| &s.blocks).filter(|b| matches!(b, Block::Plot { .. })).count()
    }

    pub fn render(&self) -> String {
        let mut out = String::new();
        let _ = write!(
            out,
            "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>{}</title>\n<style>{STYLE}</style>\n</head>\n<body data-plots=\"{}\">\n<h1>{}</h1>\n",
            escape(&self.title),
            self.plots(),
            escape(&self.title)
        );
        for s in &self.sections {
            let _ = writeln!(out, "<section>\n<h2>{}</h2>", escape(&s.heading));
            for b in &s.blocks {
                match b {
                    Block::Paragraph(t) => {
                        let _ = writeln!(out, "<p>{}</p>", escape(t));
                    }
                    Block::Pre(t) => {
                        let _ = writeln!(out, "<pre>{}</pre>", escape(t));
                    }
                    Block::Table { header, rows } => {
                        out.push_str("<table>\n<tr>");
                        for h in header {
                            let _ = write!(out, "<th>{}</th>", escape(h));
                        }
                        out.push_str("</tr>\n");
                        for r in rows {
                            out.push_str("<tr>");
                            for c in r {
                                let _ = write!(out, "<td>{}</td>", escape(c));
                            }
                            out.push_str("</tr>\n");
                        }
                        out.push_str("</table>\n");
                    }
                    Block::Plot { src, png, caption, width } => {
                        let link = png
                            .as_ref()
                            .map(|p| format!(" (<a href=\"{}\">PNG</a>)", escape(p)))
                            .unwrap_or_default();
                        let _ = writeln!(
                            out,
                            "<figure><img src=\"{}\" alt=\"{}\" width=\"{width}\" height=\"420\"><figcaption>{}{link}</figcaption></figure>",
                            escape(src),
                            escape(caption),
                            escape(caption)
                        );
                    }
                }
            }
            out.push_str("</section>\n");
        }
        let _ = write!(out, "<script>{SCRIPT}</script>\n</body>\n</html>\n");
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_every_block_escaped() {
        let mut p = Page::new("seed <002>");
        p.section(
            "Results",
            vec![
                Block::Paragraph("a & b".into()),
                Block::Pre("Hmean  1  <x>".into()),
                Block::Table {
                    header: vec!["k".into(), "v".into()],
                    rows: vec![vec!["a".into(), "1".into()]],
                },
                Block::Plot {
                    src: "plots/a.svg".into(),
                    png: Some("plots/a.png".into()),
                    caption: "ops".into(),
                    width: 720,
                },
            ],
        );
        let html = p.render();
        assert!(html.starts_with("<!DOCTYPE html>"));
        assert!(html.contains("<title>seed &lt;002&gt;</title>") && html.contains("<p>a &amp; b</p>"));
        assert!(html.contains("<pre>Hmean  1  &lt;x&gt;</pre>"));
        assert!(html.contains("<tr><td>a</td><td>1</td></tr>"));
        assert!(html.contains("<img src=\"plots/a.svg\"") && html.contains("href=\"plots/a.png\""));
        assert!(html.contains("data-plots=\"1\"") && html.contains("data-plots-loaded"));
        assert_eq!(p.plots(), 1);
    }
}
