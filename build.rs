//! Build script: validates every WGSL shader in `shaders/` with naga at build time.
//!
//! wgpu would only reject a broken shader when a GPU creates the module, so a CPU-only build (and CI
//! without an adapter) would never notice. Parsing and validating here makes a shader error a build error
//! that names the file, line and column. naga is the same major version that wgpu uses at run time.

use std::path::Path;

fn main() {
    let dir = Path::new("shaders");
    println!("cargo:rerun-if-changed=shaders");
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut files: Vec<_> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "wgsl"))
        .collect();
    files.sort();
    let mut failures = Vec::new();
    for path in &files {
        println!("cargo:rerun-if-changed={}", path.display());
        if let Err(msg) = check(path) {
            failures.push(msg);
        }
    }
    if !failures.is_empty() {
        for f in &failures {
            eprintln!("{f}");
        }
        eprintln!("error: {} WGSL shader(s) failed validation", failures.len());
        std::process::exit(1);
    }
}

/// Parses and validates one shader; the error text is naga's diagnostic, which points at
/// `path:line:column` and quotes the offending line.
pub fn check(path: &Path) -> Result<(), String> {
    let name = path.display().to_string();
    let src =
        std::fs::read_to_string(path).map_err(|e| format!("{name}: cannot read shader: {e}"))?;
    let module = naga::front::wgsl::parse_str(&src).map_err(|e| {
        format!(
            "{name}: WGSL parse error\n{}",
            e.emit_to_string_with_path(&src, &name)
        )
    })?;
    // All capabilities: this check catches syntax and type errors; whether the adapter at hand offers
    // a capability is checked by wgpu when the module is created.
    let mut validator = naga::valid::Validator::new(
        naga::valid::ValidationFlags::all(),
        naga::valid::Capabilities::all(),
    );
    validator.validate(&module).map_err(|e| {
        format!(
            "{name}: WGSL validation error\n{}",
            e.emit_to_string_with_path(&src, &name)
        )
    })?;
    Ok(())
}
