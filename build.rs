//! Build script: expands and validates every WGSL shader in `shaders/` with naga at build time.
//!
//! wgpu would only reject a broken shader when a GPU creates the module, so a CPU-only build (and CI
//! without an adapter) would never notice. Each `shaders/*.wgsl` is expanded by the project's one
//! preprocessor (`src/wgsl.rs`, included here as a module: `#import NAME` pulls in
//! `shaders/shared/NAME.wgsl`), then parsed and validated; a failure is a build error that names the
//! original file and line (not the line of the expanded text), followed by naga's diagnostic.
//! naga is the same major version that wgpu uses at run time.

use std::path::Path;

#[path = "src/wgsl.rs"]
#[allow(dead_code)]
mod wgsl;

fn main() {
    let dir = Path::new("shaders");
    println!("cargo:rerun-if-changed=shaders");
    println!("cargo:rerun-if-changed=src/wgsl.rs");
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut files: Vec<_> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "wgsl"))
        .collect();
    files.sort();
    if let Ok(shared) = std::fs::read_dir(dir.join("shared")) {
        for e in shared.flatten() {
            println!("cargo:rerun-if-changed={}", e.path().display());
        }
    }
    let mut failures = Vec::new();
    for path in &files {
        println!("cargo:rerun-if-changed={}", path.display());
        if let Err(msg) = check(path) {
            failures.push(msg);
        }
    }
    write_source_table(&files);
    if !failures.is_empty() {
        for f in &failures {
            eprintln!("{f}");
        }
        eprintln!("error: {} WGSL shader(s) failed validation", failures.len());
        std::process::exit(1);
    }
}

/// Writes `$OUT_DIR/shader_sources.rs`: every shader and shared file embedded with `include_str!`,
/// so the run-time table in `src/shaders.rs` cannot miss a file that this script validated.
fn write_source_table(files: &[std::path::PathBuf]) {
    let Some(out) = std::env::var_os("OUT_DIR") else {
        return;
    };
    let root = std::env::current_dir().expect("the build script's working directory");
    let entry = |p: &Path| {
        let stem = p
            .file_stem()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned();
        format!(
            "    ({stem:?}, include_str!({:?})),\n",
            root.join(p).display().to_string()
        )
    };
    let mut shared: Vec<_> = std::fs::read_dir("shaders/shared")
        .map(|d| {
            d.filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|e| e == "wgsl"))
                .collect()
        })
        .unwrap_or_default();
    shared.sort();
    let mut text =
        String::from("/// Every `shaders/*.wgsl`, by file stem, as written (not expanded).\n");
    text += "pub const SHADER_FILES: &[(&str, &str)] = &[\n";
    text.extend(files.iter().map(|p| entry(p)));
    text += "];\n/// Every `shaders/shared/*.wgsl`, by file stem.\n";
    text += "pub const SHARED_FILES: &[(&str, &str)] = &[\n";
    text.extend(shared.iter().map(|p| entry(p)));
    text += "];\n";
    let path = Path::new(&out).join("shader_sources.rs");
    if std::fs::read_to_string(&path).ok().as_deref() != Some(text.as_str()) {
        std::fs::write(&path, text).expect("writing shader_sources.rs");
    }
}

fn read_shared(name: &str) -> Option<String> {
    std::fs::read_to_string(wgsl::shared_path(name)).ok()
}

/// Expands, parses and validates one shader; the error names the original file and line.
pub fn check(path: &Path) -> Result<(), String> {
    let name = path.display().to_string();
    let text =
        std::fs::read_to_string(path).map_err(|e| format!("{name}: cannot read shader: {e}"))?;
    let expanded = wgsl::expand(&name, &text, &read_shared).map_err(|e| format!("error: {e}"))?;
    let src = &expanded.source;
    let expanded_name = format!("{name} (expanded)");
    // The place of a diagnostic: the line naga's report points at (`┌─ NAME (expanded):LINE:COL`),
    // else its first label, mapped back to the original file and line.
    let place = |report: &str, first: Option<naga::SourceLocation>| {
        let marker = format!("{expanded_name}:");
        let line = report.find(&marker).and_then(|i| {
            let rest = &report[i + marker.len()..];
            let digits: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
            digits.parse::<usize>().ok()
        });
        match (line, first) {
            (Some(l), _) => match expanded.origin(l) {
                Some((f, l)) => format!("{f}:{l}"),
                None => name.clone(),
            },
            (None, Some(l)) => expanded.place_of_offset(l.offset as usize),
            (None, None) => name.clone(),
        }
    };
    let module = naga::front::wgsl::parse_str(src).map_err(|e| {
        let report = e.emit_to_string_with_path(src, &expanded_name);
        let at = place(&report, e.location(src));
        format!("error: {at}: WGSL parse error in {name}\n{report}")
    })?;
    // All capabilities: this check catches syntax and type errors; whether the adapter at hand offers
    // a capability is checked by wgpu when the module is created.
    let mut validator = naga::valid::Validator::new(
        naga::valid::ValidationFlags::all(),
        naga::valid::Capabilities::all(),
    );
    validator.validate(&module).map_err(|e| {
        let report = e.emit_to_string_with_path(src, &expanded_name);
        let at = place(&report, e.location(src));
        format!("error: {at}: WGSL validation error in {name}\n{report}")
    })?;
    Ok(())
}
