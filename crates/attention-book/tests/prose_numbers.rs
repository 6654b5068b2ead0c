//! Every number a page's prose quotes agrees with what the book's code
//! prints or states: one of the page's captured outputs (`figures/*.txt`
//! it includes), the source files it shows listings from (a configuration
//! or a checked bound it states), or the output printed in a committed
//! benchmark report it names by path (the Performance page: every report,
//! whole). The few
//! numbers quoted from elsewhere (a paper, d2l's printed run, a version)
//! are listed in `quoted-numbers.txt` with their source; "from test `name`"
//! there names the test that asserts the number.

mod common;

use std::fs;

use attention_book::agreement::{check_page, marks, sources};
use attention_book::compare::numbers;
use common::{book, pages};

/// Whether the function `name` in the workspace's code states `number`:
/// one of the numbers in its body (from its name to its closing brace;
/// `49_449` reads as 49449) has exactly its value.
fn test_asserts(name: &str, number: &str) -> bool {
    let needle = format!("fn {name}(");
    let value: f64 = number.replace(',', "").parse().unwrap();
    let mut stack = vec![book().join("crates")];
    while let Some(dir) = stack.pop() {
        for entry in fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            let Ok(text) = fs::read_to_string(&path) else {
                continue;
            };
            if let Some(start) = text.find(&needle) {
                let body = function_body(&text[start..]).replace('_', "");
                return numbers(&body).contains(&value);
            }
        }
    }
    false
}

/// `code` from its start to the brace that closes its first `{`.
fn function_body(code: &str) -> &str {
    let mut depth = 0;
    for (i, c) in code.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 1 => return &code[..=i],
            '}' => depth -= 1,
            _ => {}
        }
    }
    code
}

#[test]
fn every_number_in_the_prose_agrees_with_an_output_or_is_marked() {
    let marks = marks(&book()).unwrap();
    let mut problems = Vec::new();
    let mut used = vec![false; marks.len()];
    for (path, text) in pages() {
        let page = path.file_name().unwrap().to_string_lossy().into_owned();
        let sources =
            sources(&book(), &book().join("src"), &page, &text).unwrap();
        let found = check_page(&page, &text, &sources, &marks);
        for &i in &found.used {
            used[i] = true;
        }
        for q in &found.unsupported {
            let mut outputs: Vec<&str> = sources
                .iter()
                .map(|(n, _)| n.as_str())
                .filter(|n| !n.ends_with(".rs"))
                .collect();
            outputs.dedup();
            problems.push(format!(
                "{page}:{}: {} in “{}” agrees with none of the page's outputs ({}) and listings; \
                 correct the sentence, or list the number in quoted-numbers.txt with its source",
                q.line,
                q.text,
                q.sentence,
                outputs.join(", ")
            ));
        }
        eprintln!("{page}: {} numbers marked", found.used.len());
    }
    for (mark, used) in marks.iter().zip(&used) {
        if !used {
            problems.push(format!(
                "quoted-numbers.txt: {} {} is not needed (not on the page, or it agrees with an output)",
                mark.page, mark.number
            ));
        }
        if let Some(rest) = mark.source.strip_prefix("from test `") {
            let name = rest.split('`').next().unwrap();
            if !test_asserts(name, &mark.number) {
                problems.push(format!(
                    "quoted-numbers.txt: no test `{name}` that states {}",
                    mark.number
                ));
            }
        }
    }
    assert!(problems.is_empty(), "\n{}", problems.join("\n"));
}
