//! The WGSL preprocessor: expands `#import NAME` lines into the text of `shaders/shared/NAME.wgsl`,
//! so the kernels share their structs and helpers (layout, spline basis, penalty, …) without copies.
//!
//! It is the one preprocessor of the project: `build.rs` includes this file (`#[path]`) to validate
//! every expanded shader with naga at build time, and [`crate::shaders`] calls it at run time on the
//! same sources (embedded with `include_str!`), so what the build checked is what the GPU gets.
//!
//! Rules: a line whose first non-blank text is `#import NAME` is replaced by the expansion of the
//! shared file `NAME` (recursively; each file is inserted at most once per shader, at its first
//! import, so two imports of `layout` declare its structs once). Import cycles and unknown names are
//! errors naming the importing file and line. The expansion keeps a line map, so a naga diagnostic at
//! line `n` of the expanded text can be reported at the original file and line ([`Expanded::origin`]).
//!
//! This file must stay free of crate dependencies other than `std` and `thiserror` (build.rs compiles it
//! on its own).

use std::collections::HashSet;

/// Why a shader could not be expanded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WgslError {
    #[error("{file}:{line}: `#import {name}`: no shared shader `shaders/shared/{name}.wgsl`")]
    UnknownImport {
        file: String,
        line: usize,
        name: String,
    },
    #[error("{file}:{line}: `#import {name}` closes an import cycle ({chain})")]
    Cycle {
        file: String,
        line: usize,
        name: String,
        chain: String,
    },
    #[error("{file}:{line}: `#import` needs one name, as in `#import layout`")]
    BadDirective { file: String, line: usize },
}

/// An expanded shader: its text and, per line of it, the file and 1-based line it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expanded {
    pub source: String,
    origins: Vec<(String, usize)>,
}

impl Expanded {
    /// The original file and 1-based line of the expanded text's 1-based line `line`.
    pub fn origin(&self, line: usize) -> Option<(&str, usize)> {
        self.origins
            .get(line.checked_sub(1)?)
            .map(|(f, l)| (f.as_str(), *l))
    }

    /// The original place of byte `offset` of the expanded text, as `file:line`.
    pub fn place_of_offset(&self, offset: usize) -> String {
        let end = offset.min(self.source.len());
        let line = self.source[..end].bytes().filter(|&b| b == b'\n').count() + 1;
        match self.origin(line) {
            Some((f, l)) => format!("{f}:{l}"),
            None => format!("<expanded>:{line}"),
        }
    }
}

/// The path under which a shared shader is named in messages.
pub fn shared_path(name: &str) -> String {
    format!("shaders/shared/{name}.wgsl")
}

/// Expands the shader `file` (its name in messages) with text `text`; `shared(name)` returns the
/// text of `shaders/shared/NAME.wgsl`, or `None` when there is no such file.
pub fn expand(
    file: &str,
    text: &str,
    shared: &dyn Fn(&str) -> Option<String>,
) -> Result<Expanded, WgslError> {
    let mut out = Expanded {
        source: String::with_capacity(text.len() * 2),
        origins: Vec::new(),
    };
    let mut done = HashSet::new();
    let mut stack = vec![file.to_string()];
    expand_into(file, text, shared, &mut out, &mut done, &mut stack)?;
    Ok(out)
}

fn expand_into(
    file: &str,
    text: &str,
    shared: &dyn Fn(&str) -> Option<String>,
    out: &mut Expanded,
    done: &mut HashSet<String>,
    stack: &mut Vec<String>,
) -> Result<(), WgslError> {
    for (i, line) in text.lines().enumerate() {
        let lineno = i + 1;
        let Some(rest) = line.trim_start().strip_prefix("#import") else {
            out.source.push_str(line);
            out.source.push('\n');
            out.origins.push((file.to_string(), lineno));
            continue;
        };
        let mut words = rest.split_whitespace();
        let (Some(name), None) = (words.next(), words.next()) else {
            return Err(WgslError::BadDirective {
                file: file.into(),
                line: lineno,
            });
        };
        if !rest.starts_with(char::is_whitespace) {
            return Err(WgslError::BadDirective {
                file: file.into(),
                line: lineno,
            });
        }
        let path = shared_path(name);
        if stack.contains(&path) {
            return Err(WgslError::Cycle {
                file: file.into(),
                line: lineno,
                name: name.into(),
                chain: format!("{} -> {path}", stack.join(" -> ")),
            });
        }
        // Keep the line count: the directive becomes a comment line of its own.
        out.source.push_str("// ");
        out.source.push_str(line.trim_start());
        out.source.push('\n');
        out.origins.push((file.to_string(), lineno));
        if !done.insert(path.clone()) {
            continue;
        }
        let Some(body) = shared(name) else {
            return Err(WgslError::UnknownImport {
                file: file.into(),
                line: lineno,
                name: name.into(),
            });
        };
        stack.push(path.clone());
        expand_into(&path, &body, shared, out, done, stack)?;
        stack.pop();
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lib(name: &str) -> Option<String> {
        match name {
            "a" => Some("struct A { x: f32 }\n".into()),
            "b" => Some("#import a\nfn b() {}\n".into()),
            "loop1" => Some("#import loop2\n".into()),
            "loop2" => Some("#import loop1\n".into()),
            _ => None,
        }
    }

    #[test]
    fn imports_once_and_maps_lines() {
        let e = expand("k.wgsl", "#import b\n  #import a\nfn main() {}\n", &lib).unwrap();
        assert_eq!(e.source.matches("struct A").count(), 1);
        let main_line = e.source.lines().position(|l| l == "fn main() {}").unwrap() + 1;
        assert_eq!(e.origin(main_line), Some(("k.wgsl", 3)));
        let a_line = e
            .source
            .lines()
            .position(|l| l.starts_with("struct A"))
            .unwrap()
            + 1;
        assert_eq!(e.origin(a_line), Some(("shaders/shared/a.wgsl", 1)));
        let off = e.source.find("fn b").unwrap();
        assert_eq!(e.place_of_offset(off), "shaders/shared/b.wgsl:2");
    }

    #[test]
    fn errors_name_file_and_line() {
        let e = expand("k.wgsl", "\n#import nope\n", &lib).unwrap_err();
        assert_eq!(
            e.to_string(),
            "k.wgsl:2: `#import nope`: no shared shader `shaders/shared/nope.wgsl`"
        );
        let e = expand("k.wgsl", "#import loop1\n", &lib).unwrap_err();
        assert!(matches!(e, WgslError::Cycle { .. }), "{e}");
        assert!(
            e.to_string().starts_with("shaders/shared/loop2.wgsl:1"),
            "{e}"
        );
        let e = expand("k.wgsl", "#import a b\n", &lib).unwrap_err();
        assert!(matches!(e, WgslError::BadDirective { line: 1, .. }), "{e}");
        let e = expand("k.wgsl", "#importa\n", &lib).unwrap_err();
        assert!(matches!(e, WgslError::BadDirective { line: 1, .. }), "{e}");
    }
}
