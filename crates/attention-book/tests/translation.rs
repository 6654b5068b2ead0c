//! The Chinese catalogue (`po/zh-CN.po`) against the English it
//! translates: every translated message keeps the numbers of its English
//! one and its inline code, link targets, math and HTML, and uses the glossary's Chinese for each of its terms of two words
//! or more (`src/glossary.md`). That no message is missing or fuzzy is
//! checked by `scripts/update-translation --check` (with mdbook-xgettext
//! and `msgfmt --statistics`), which CI runs.

// (this file uses two of the page checks' helpers)
#[allow(dead_code)]
mod common;

use std::collections::HashMap;
use std::fs;
use std::sync::LazyLock;

use attention_book::math::{protect, restore};
use common::{book, pages};
use regex::Regex;

/// One message of a PO file.
#[derive(Debug)]
struct Message {
    msgid: String,
    msgstr: String,
    fuzzy: bool,
}

/// A PO string's content: `"a\"b\n"` → `a"b` and a newline.
fn unquote(quoted: &str) -> String {
    let inner = quoted
        .trim()
        .strip_prefix('"')
        .and_then(|s| s.strip_suffix('"'))
        .unwrap_or_else(|| panic!("not a PO string: {quoted}"));
    let mut out = String::new();
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some(other) => out.push(other),
            None => panic!("a PO string ends in a backslash: {quoted}"),
        }
    }
    out
}

/// The messages of a PO file, header and obsolete (`#~`) entries left out.
fn messages(po: &str) -> Vec<Message> {
    let mut found = Vec::new();
    for entry in po.split("\n\n") {
        let (mut msgid, mut msgstr) = (String::new(), String::new());
        let mut fuzzy = false;
        let mut field: Option<&mut String> = None;
        for line in entry.lines() {
            if line.starts_with("#,") && line.contains("fuzzy") {
                fuzzy = true;
            } else if line.starts_with('#') {
                continue;
            } else if let Some(rest) = line.strip_prefix("msgid ") {
                msgid = unquote(rest);
                field = Some(&mut msgid);
            } else if let Some(rest) = line.strip_prefix("msgstr ") {
                msgstr = unquote(rest);
                field = Some(&mut msgstr);
            } else if line.starts_with('"') {
                field
                    .as_mut()
                    .expect("a continued string after msgid or msgstr")
                    .push_str(&unquote(line));
            }
        }
        if !msgid.is_empty() {
            found.push(Message {
                msgid,
                msgstr,
                fuzzy,
            });
        }
    }
    found
}

fn catalogue() -> Vec<Message> {
    let path = book().join("po/zh-CN.po");
    let po = fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let found = messages(&po);
    assert!(
        found.len() > 100,
        "{}: only {} messages",
        path.display(),
        found.len()
    );
    found
}

/// The numbers written in `text`, thousands separators dropped, counted.
fn numbers(text: &str) -> HashMap<String, usize> {
    static NUMBER: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"\d+(?:,\d{3})*(?:\.\d+)?").expect("a valid pattern")
    });
    let mut counts = HashMap::new();
    for m in NUMBER.find_iter(text) {
        *counts.entry(m.as_str().replace(',', "")).or_insert(0) += 1;
    }
    counts
}

#[test]
fn every_translation_keeps_the_numbers_of_its_english() {
    let mut problems = Vec::new();
    for m in catalogue().iter().filter(|m| !m.msgstr.is_empty()) {
        let translated = numbers(&m.msgstr);
        for (number, count) in numbers(&m.msgid) {
            let kept = translated.get(&number).copied().unwrap_or(0);
            if kept < count {
                problems.push(format!(
                    "{number} ({count} times in the English, {kept} in the \
                     Chinese):\n  en: {}\n  zh: {}",
                    m.msgid, m.msgstr
                ));
            }
        }
    }
    assert!(
        problems.is_empty(),
        "numbers lost:\n{}",
        problems.join("\n")
    );
}

/// What a translation must keep as it is: inline code, link targets, math
/// and HTML tags, each counted.
fn kept_markup(text: &str) -> Vec<HashMap<String, usize>> {
    static MARKUP: LazyLock<[Regex; 4]> = LazyLock::new(|| {
        let re = |p: &str| Regex::new(p).expect("a valid pattern");
        [
            re(r"`[^`]+`"),
            re(r"\]\(([^)]*)\)"),
            re(r"\$\$?[^$]+\$\$?"),
            re(r"</?[a-zA-Z][^>]*>"),
        ]
    });
    MARKUP
        .iter()
        .map(|pattern| {
            let mut counts = HashMap::new();
            for m in pattern.find_iter(text) {
                *counts.entry(m.as_str().to_owned()).or_insert(0) += 1;
            }
            counts
        })
        .collect()
}

#[test]
fn every_translation_keeps_code_links_math_and_html() {
    let problems: Vec<String> = catalogue()
        .iter()
        .filter(|m| !m.msgstr.is_empty())
        .filter(|m| kept_markup(&m.msgid) != kept_markup(&m.msgstr))
        .map(|m| format!("  en: {}\n  zh: {}", m.msgid, m.msgstr))
        .collect();
    assert!(
        problems.is_empty(),
        "inline code, link targets, math or HTML changed:\n{}",
        problems.join("\n")
    );
}

/// The glossary's rows (English, Chinese) whose English term has two words
/// or more (single words such as "key" or "value" have other senses).
fn glossary_phrases() -> Vec<(String, String)> {
    let page = fs::read_to_string(book().join("src/glossary.md")).unwrap();
    let section = page
        .split("## English to Chinese")
        .nth(1)
        .and_then(|s| s.split("\n## ").next())
        .expect("src/glossary.md has an English to Chinese table");
    let rows: Vec<(String, String)> = section
        .lines()
        .filter_map(|line| {
            let cells: Vec<&str> = line.split('|').map(str::trim).collect();
            match cells[..] {
                ["", en, zh, ""] if !en.starts_with('-') && en != "English" => {
                    // in italics; a note in parentheses is not part of it
                    let en = en.split(" (").next().unwrap_or(en);
                    Some((en.trim_matches('*').to_lowercase(), zh.to_owned()))
                }
                _ => None,
            }
        })
        .collect();
    assert!(rows.len() > 20, "only {} glossary rows", rows.len());
    rows.into_iter()
        .filter(|(en, _)| en.contains([' ', '-', '–']))
        .collect()
}

#[test]
fn translations_use_the_glossary_s_terms() {
    let phrases = glossary_phrases();
    let mut problems = Vec::new();
    for m in catalogue().iter().filter(|m| !m.msgstr.is_empty()) {
        // the glossary's English terms (in italics) stay English
        let glossary_cell = |(en, _): &(String, String)| {
            let id = m.msgid.to_lowercase();
            id.starts_with(&format!("*{en}*"))
                || id.starts_with(&format!("_{en}_"))
        };
        if phrases.iter().any(glossary_cell) {
            continue;
        }
        let english = m.msgid.to_lowercase();
        for (en, zh) in &phrases {
            if english.contains(en.as_str()) && !m.msgstr.contains(zh.as_str())
            {
                problems.push(format!(
                    "\"{en}\" is not {zh}:\n  en: {}\n  zh: {}",
                    m.msgid, m.msgstr
                ));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn no_translation_is_fuzzy() {
    let fuzzy: Vec<String> = catalogue()
        .into_iter()
        .filter(|m| m.fuzzy)
        .map(|m| m.msgid)
        .collect();
    assert!(
        fuzzy.is_empty(),
        "fuzzy (to review, then unmark): {fuzzy:?}"
    );
}

#[test]
fn the_po_reader_reads_continued_and_escaped_strings() {
    let po = "msgid \"\"\nmsgstr \"Language: zh_CN\\n\"\n\n\
              #: src/a.md:1\n#, fuzzy\nmsgid \"\"\n\"Say \\\"hi\\\"\\n\"\n\
              \"to 1,000 people\"\nmsgstr \"向 1000 人说“你好”\"\n";
    let found = messages(po);
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].msgid, "Say \"hi\"\nto 1,000 people");
    assert!(found[0].fuzzy);
    assert_eq!(numbers(&found[0].msgid), numbers(&found[0].msgstr));
}

#[test]
fn protecting_the_math_gives_every_page_back_and_hides_every_formula() {
    let code_span = Regex::new("`[^`]*`").unwrap();
    for (path, text) in pages() {
        let protected = protect(&text);
        assert_eq!(restore(&protected), text, "{}", path.display());
        // no `$` left outside code spans, fenced code and display blocks
        let (mut in_code, mut in_display) = (false, false);
        let mut prose = String::new();
        for line in protected.lines() {
            let t = line.trim();
            if t.starts_with("```") {
                in_code = !in_code;
            } else if t == "<div class=\"math-protected\">" {
                in_display = true;
            } else if in_display && t == "</div>" {
                in_display = false;
            } else if !in_code && !in_display {
                prose.push_str(line);
                prose.push('\n');
            }
        }
        let left = code_span.replace_all(&prose, "").matches('$').count();
        assert_eq!(
            left,
            0,
            "{}: `$` outside a protected formula",
            path.display()
        );
    }
}

/// A link to a section (`page.md#id`, `#id`) leads there in both editions:
/// its heading carries the id (`## Title {#id}`), since the Chinese
/// edition's ids would otherwise come from its Chinese headings.
#[test]
fn every_section_link_targets_a_heading_with_its_own_id() {
    let link = Regex::new(r"\]\(([a-z0-9-]*\.md)?#([^)]+)\)").unwrap();
    let pages = pages();
    let mut checked = 0;
    for (path, text) in &pages {
        for c in link.captures_iter(text) {
            let target = match c.get(1) {
                Some(page) => {
                    &pages
                        .iter()
                        .find(|(p, _)| p.ends_with(page.as_str()))
                        .unwrap_or_else(|| {
                            panic!("{}: no page {}", path.display(), &c[1])
                        })
                        .1
                }
                None => text,
            };
            let id = format!("{{#{}}}", &c[2]);
            assert!(
                target
                    .lines()
                    .any(|l| l.starts_with('#') && l.ends_with(&id)),
                "{}: the link to {} needs a heading ending in {id}",
                path.display(),
                &c[0][2..]
            );
            checked += 1;
        }
    }
    assert!(checked >= 5, "only {checked} section links found");
}

/// A Chinese character (CJK Unified Ideographs and Extension A).
fn is_chinese(c: char) -> bool {
    ('\u{4e00}'..='\u{9fff}').contains(&c)
        || ('\u{3400}'..='\u{4dbf}').contains(&c)
}

/// Single emphasis (`*…*` or `_…_`, code spans aside) directly next to a
/// Chinese character, with the characters around it.
fn emphasis_touching_chinese(text: &str) -> Vec<String> {
    static EMPHASIS: LazyLock<[Regex; 2]> = LazyLock::new(|| {
        let span = |d: &str| {
            let no = format!(r"[^\s{d}\x01]");
            let inner = format!(r"[^{d}\x01]");
            Regex::new(&format!(r"{d}{no}(?:{inner}*{no})?{d}")).unwrap()
        };
        [span(r"\*"), span("_")]
    });
    let code = Regex::new("`[^`]*`").unwrap();
    let masked =
        code.replace_all(text, |m: &regex::Captures| "C".repeat(m[0].len()));
    let masked = masked.replace("**", "\x01\x01");
    let mut found = Vec::new();
    for (i, pattern) in EMPHASIS.iter().enumerate() {
        for m in pattern.find_iter(&masked) {
            let before = masked[..m.start()].chars().next_back();
            let after = masked[m.end()..].chars().next();
            // an identifier's underscores (`dec_valid_lens`) are no emphasis
            if i == 1 && before.is_some_and(|c| c.is_ascii_alphanumeric()) {
                continue;
            }
            if before.is_some_and(is_chinese) || after.is_some_and(is_chinese) {
                let around =
                    |c: Option<char>| c.map(String::from).unwrap_or_default();
                found.push(format!(
                    "{}{}{}",
                    around(before),
                    &text[m.range()],
                    around(after)
                ));
            }
        }
    }
    found
}

/// mdbook-gettext writes every emphasis back as `_…_`, and CommonMark
/// reads an `_` between two letters as part of a word: emphasis next to a
/// Chinese character would show its underscores. The catalogue puts a
/// space (or punctuation) between them; bold (`**`) is not affected.
#[test]
fn no_emphasis_touches_a_chinese_character() {
    let problems: Vec<String> = catalogue()
        .iter()
        .flat_map(|m| emphasis_touching_chinese(&m.msgstr))
        .collect();
    assert!(
        problems.is_empty(),
        "emphasis next to Chinese: {problems:#?}"
    );
    assert_eq!(emphasis_touching_chinese("键被*隐藏*的"), ["被*隐藏*的"]);
    assert!(
        emphasis_touching_chinese(
            "键被 *隐藏* 的，`a_b_c`，dec_valid_lens，**粗**体"
        )
        .is_empty()
    );
}
