//! The Rust blocks written inline in the book's pages, compiled and run.
include!(concat!(env!("OUT_DIR"), "/skeptic-tests.rs"));
