//! The Performance appendix: the table and figure of the benchmark suite's
//! dated run (`cargo bench -p d2l-attention --bench suite -- --json FILE`).

use std::fmt::Write;

use burn::tensor::Device;

use super::{Listing, Output};
use crate::performance::Run;

/// The listings of this appendix.
pub const LISTINGS: &[Listing] =
    &[Listing::new("performance-run", file!(), run_demo)];

/// The run the appendix shows, as the suite wrote it.
const RUN: &str =
    include_str!("../../benches/reports/2026-12-06-suite.json");

fn run_demo(_device: &Device, out: &mut Output) -> anyhow::Result<()> {
    // ANCHOR: run
    let run: Run = serde_json::from_str(RUN)?;
    write!(out, "{}", run.table())?;
    out.figure("performance-ratios", run.figure()?);
    // ANCHOR_END: run
    Ok(())
}
