//! Checks over the book's pages: no Rust block escapes testing, and every
//! include, figure and captured output they name exists.

mod common;

use std::fs;

use attention_book::read_manifest;
use attention_book::agreement::includes;
use common::{book, pages};

/// The fenced code blocks of a page: (info string, body lines).
fn code_blocks(text: &str) -> Vec<(String, Vec<String>)> {
    let mut blocks = Vec::new();
    let mut open: Option<(String, Vec<String>)> = None;
    for line in text.lines() {
        let trimmed = line.trim_start();
        match (&mut open, trimmed.strip_prefix("```")) {
            (None, Some(info)) => {
                open = Some((info.trim().to_owned(), Vec::new()))
            }
            (Some(_), Some(_)) => blocks.push(open.take().unwrap()),
            (Some((_, body)), None) => body.push(trimmed.to_owned()),
            (None, None) => {}
        }
    }
    assert!(open.is_none(), "an unclosed code fence");
    blocks
}

#[test]
fn every_rust_block_is_compiled_and_tested() {
    let mut inline = 0;
    for (page, text) in pages() {
        for (info, body) in code_blocks(&text) {
            if !info.starts_with("rust") {
                continue;
            }
            let skipped_by_skeptic = ["ignore", "no_run", "compile_fail"]
                .iter()
                .any(|w| info.contains(w));
            if skipped_by_skeptic {
                // Allowed only for an anchored listing of the compiled crate.
                let is_listing = body.len() == 1
                    && body[0].starts_with("{{#include ../crates/")
                    && body[0].contains(':');
                assert!(
                    is_listing,
                    "{}: a ```{info} block that is not an anchored include escapes testing: {body:?}",
                    page.display()
                );
            } else {
                assert!(
                    !body.iter().any(|l| l.contains("{{#include")),
                    "{}: includes must be ```rust,ignore (skeptic cannot expand them)",
                    page.display()
                );
                inline += 1;
            }
        }
    }
    assert!(inline >= 1, "skeptic has no inline block to test");
}

#[test]
fn every_include_resolves_to_an_existing_anchor() {
    for (page, text) in pages() {
        let dir = page.parent().unwrap();
        for (path, anchor) in includes(&text) {
            let file = dir.join(&path);
            let source = fs::read_to_string(&file).unwrap_or_else(|e| {
                panic!("{}: {{{{#include {path}}}}}: {e}", page.display())
            });
            if let Some(anchor) = anchor {
                for marker in [
                    format!("// ANCHOR: {anchor}\n"),
                    format!("// ANCHOR_END: {anchor}\n"),
                ] {
                    assert!(
                        source.contains(&marker),
                        "{}: {path} has no `{}`",
                        page.display(),
                        marker.trim()
                    );
                }
            }
        }
    }
}

#[test]
fn every_figure_a_page_shows_exists_and_every_output_is_shown() {
    let all_text: String = pages().into_iter().map(|(_, t)| t).collect();
    for part in all_text.split("figures/").skip(1) {
        let name: String = part
            .chars()
            .take_while(|c| c.is_alphanumeric() || "-_.".contains(*c))
            .collect();
        assert!(
            book().join("figures").join(&name).is_file(),
            "a page shows figures/{name}, which does not exist"
        );
    }
    for (listing, entry) in read_manifest(&book().join("figures")) {
        for (f, _) in entry.files {
            assert!(
                all_text.contains(&format!("figures/{f}")),
                "no page shows figures/{f} of listing `{listing}`"
            );
        }
    }
}

/// Captured outputs fit the listings' 80 columns (rustfmt's `max_width`),
/// so that no printed line is wider than the code that printed it.
#[test]
fn every_captured_output_fits_80_columns() {
    for (_, entry) in read_manifest(&book().join("figures")) {
        for (f, _) in entry.files.iter().filter(|(f, _)| f.ends_with(".txt")) {
            let text = fs::read_to_string(book().join("figures").join(f));
            for (i, line) in text.unwrap().lines().enumerate() {
                let width = line.chars().count();
                assert!(width <= 80, "figures/{f}:{}: {width} columns", i + 1);
            }
        }
    }
}

/// The SVG figures each page shows, in order, with their text.
fn figures_of(text: &str) -> Vec<(String, String)> {
    text.lines()
        .filter_map(|l| l.trim().strip_prefix("!["))
        .filter_map(|l| l.split_once("](figures/"))
        .filter_map(|(_, rest)| rest.strip_suffix(".svg)"))
        .map(|name| {
            let svg = book().join("figures").join(format!("{name}.svg"));
            (name.to_owned(), fs::read_to_string(svg).unwrap())
        })
        .collect()
}

/// In print a figure is at most 100 mm high (theme/print.css), in px.
const PRINT_MAX_HEIGHT: f64 = 100.0 / 25.4 * 96.0;

/// Every figure's text is at least 9 px where the book shows it: on screen
/// ([`display_width`]), and in print, where theme/print.css sizes it so:
/// at most [`PRINT_MAX_HEIGHT`] high, the A4 text width and its natural
/// width; at least 400 px wide where that fits the height, and the width
/// at which its smallest text is 9 px (`--legible`), the text width at most.
#[test]
fn every_figure_s_text_is_at_least_9_px_where_it_is_shown() {
    use d2l_attention::plot::{PRINT_WIDTH, display_width, min_text_px, svg_size};
    let mut checked = 0;
    for (page, text) in pages() {
        for (name, svg) in figures_of(&text) {
            let (width, height) = svg_size(&svg).unwrap();
            let (width, height) = (width as f64, height as f64);
            let capped = PRINT_MAX_HEIGHT * width / height;
            let legible = min_text_px(&svg, width)
                .map_or(0.0, |px| (width * 9.0 / px).ceil());
            let floor = PRINT_WIDTH.min(legible.max(capped.min(400.0)));
            let printed = width.min(PRINT_WIDTH).min(capped).max(floor);
            for shown in [display_width(width), printed] {
                let px = min_text_px(&svg, shown).unwrap_or(f64::INFINITY);
                assert!(
                    px >= 9.0,
                    "{}: figures/{name}.svg, {width} px wide, shown {shown} \
                     px wide: its smallest text is {px:.1} px",
                    page.display()
                );
            }
            checked += 1;
        }
    }
    assert!(checked >= 30, "only {checked} figures found");
}

/// A series keeps its colour and line style (its legend swatch) across
/// the figures of a page.
#[test]
fn a_series_looks_the_same_in_every_figure_of_a_page() {
    let legend = regex::Regex::new(r#"(?s)<g class="legend">.*?</g>"#).unwrap();
    let entry = regex::Regex::new(
        r##"<(line|circle) [^>]*?((?:stroke|fill)="#[0-9A-F]{6}"[^>]*?)/>\n<text [^>]*>([^<]+)</text>"##,
    )
    .unwrap();
    let position =
        regex::Regex::new(r#"\b(x1|x2|y1|y2|cx|cy)="[^"]*" ?"#).unwrap();
    let mut legends = 0;
    for (page, text) in pages() {
        let mut seen = std::collections::HashMap::new();
        for (name, svg) in figures_of(&text) {
            let legends_of_figure: String =
                legend.find_iter(&svg).map(|m| m.as_str()).collect();
            for c in entry.captures_iter(&legends_of_figure) {
                legends += 1;
                let look = position.replace_all(&c[2], "").into_owned();
                let label = c[3].to_owned();
                let (first, figure) = seen
                    .entry(label.clone())
                    .or_insert((look.clone(), name.clone()));
                assert_eq!(
                    &look,
                    first,
                    "{}: “{label}” looks different in {name} and {figure}",
                    page.display()
                );
            }
        }
    }
    assert!(legends >= 10, "only {legends} legend entries found");
}

/// Every diagram's drawing code is folded (inside a `<details>`), the same
/// way on every page: it is layout, not the chapter's subject.
#[test]
fn every_diagram_s_code_is_folded() {
    let mut diagrams = 0;
    for (page, text) in pages() {
        let dir = page.parent().unwrap();
        let mut depth = 0;
        for line in text.lines() {
            depth += line.matches("<details").count();
            depth -= line.matches("</details>").count();
            for (path, anchor) in includes(line) {
                let Some(anchor) = anchor else { continue };
                let source = fs::read_to_string(dir.join(&path)).unwrap();
                let start =
                    source.find(&format!("// ANCHOR: {anchor}\n")).unwrap();
                let end =
                    source.find(&format!("// ANCHOR_END: {anchor}\n")).unwrap();
                if source[start..end].contains("Diagram::new") {
                    diagrams += 1;
                    assert!(
                        depth > 0,
                        "{}: the diagram code {path}:{anchor} is not folded",
                        page.display()
                    );
                }
            }
        }
    }
    assert_eq!(diagrams, 7, "the book's diagram listings");
}
