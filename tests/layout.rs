//! The layout contract: every struct of `src/layout.rs` has the size and field offsets (and field
//! names, in order) that naga computes for its mirror in `shaders/shared/layout.wgsl`, under the
//! storage address space's layout rules.

use yarnsim::layout::layouts;

fn reflected() -> naga::Module {
    let src = yarnsim::shaders::shared_source("layout").expect("shaders/shared/layout.wgsl");
    naga::front::wgsl::parse_str(src).unwrap_or_else(|e| panic!("{}", e.emit_to_string(src)))
}

#[test]
fn rust_structs_match_wgsl_layout() {
    let module = reflected();
    let rust = layouts();
    assert!(rust.len() >= 10, "{} structs listed", rust.len());
    for s in &rust {
        let ty = module
            .types
            .iter()
            .find(|(_, t)| t.name.as_deref() == Some(s.name))
            .unwrap_or_else(|| panic!("struct {} is not declared in layout.wgsl", s.name))
            .1;
        let naga::TypeInner::Struct { members, span } = &ty.inner else {
            panic!("{} is not a struct in layout.wgsl", s.name);
        };
        let wgsl: Vec<(&str, usize)> = members
            .iter()
            .map(|m| (m.name.as_deref().unwrap_or("?"), m.offset as usize))
            .collect();
        assert_eq!(
            s.fields, wgsl,
            "{}: Rust fields (name, offset) differ from the WGSL struct's",
            s.name
        );
        assert_eq!(
            s.size, *span as usize,
            "{}: Rust size {} vs WGSL size {}",
            s.name, s.size, span
        );
    }
    // Every struct declared in layout.wgsl is in the Rust list too.
    for (_, t) in module.types.iter() {
        if let (Some(name), naga::TypeInner::Struct { .. }) = (&t.name, &t.inner) {
            assert!(
                rust.iter().any(|s| s.name == name),
                "layout.wgsl declares {name}, which src/layout.rs does not list"
            );
        }
    }
}

/// An empty array is bound as `pipelines::MIN_BUFFER` bytes, which must hold one of any record
/// (a runtime-sized array binding needs at least one element).
#[test]
fn empty_buffers_hold_one_record_of_any_kind() {
    for s in layouts() {
        assert!(
            s.size as u64 <= yarnsim::pipelines::MIN_BUFFER,
            "{} is {} bytes, more than MIN_BUFFER",
            s.name,
            s.size
        );
    }
}

/// The check itself can fail: a struct whose WGSL mirror is laid out differently is caught.
#[test]
fn a_vec3_field_would_be_caught() {
    let src = "struct Edge { a: u32, b: vec3<f32>, yarn: u32, rest_length: f32 };";
    let m = naga::front::wgsl::parse_str(src).unwrap();
    let (_, ty) = m
        .types
        .iter()
        .find(|(_, t)| t.name.as_deref() == Some("Edge"))
        .unwrap();
    let naga::TypeInner::Struct { members, span } = &ty.inner else {
        unreachable!()
    };
    let rust = layouts().into_iter().find(|s| s.name == "Edge").unwrap();
    let wgsl: Vec<(&str, usize)> = members
        .iter()
        .map(|m| (m.name.as_deref().unwrap(), m.offset as usize))
        .collect();
    assert!(rust.fields != wgsl || rust.size != *span as usize);
}

/// Every `const` of layout.wgsl has the value of its Rust twin in `layout::constants`, and every
/// such constant is listed there.
#[test]
fn rust_constants_match_wgsl_constants() {
    let module = reflected();
    let rust = yarnsim::layout::constants();
    let mut wgsl = Vec::new();
    for (_, c) in module.constants.iter() {
        let name = c.name.clone().expect("named const");
        let value = match module.global_expressions[c.init] {
            naga::Expression::Literal(naga::Literal::U32(v)) => v,
            ref e => panic!("layout.wgsl: const {name} is not a u32 literal: {e:?}"),
        };
        wgsl.push((name, value));
    }
    assert!(wgsl.len() >= 20, "{} constants reflected", wgsl.len());
    for (name, value) in &wgsl {
        let twin = rust.iter().find(|(n, _)| n == name);
        assert_eq!(
            twin.map(|t| t.1),
            Some(*value),
            "layout.wgsl's {name} = {value}: layout::constants has {twin:?}"
        );
    }
    assert_eq!(
        rust.len(),
        wgsl.len(),
        "layout::constants lists a constant layout.wgsl lacks"
    );
}
