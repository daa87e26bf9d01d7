// acl_rebuild_box: the control points of a box in ACL's rebuild kernels (raw: 4 per segment of
// its u range, then of its v range; their distinct values, sorted, are the set's points). Needs
// layout and acl_rebuild; the importing kernel binds `rebuild` and `segments` and declares the
// workgroup arrays `raw` and `is_first` (MAX_BOX_CPS entries).

// The number of raw control points of box nb (4 per segment of each range).
fn raw_count(nb: vec4<u32>) -> u32 {
    let b = rebuild.b;
    return 4u * ((nb.y / b - nb.x / b + 1u) + (nb.w / b - nb.z / b + 1u));
}

// Raw control point e of box nb: 4 per segment of its u range, then of its v range.
fn raw_cp(nb: vec4<u32>, e: u32) -> u32 {
    let b = rebuild.b;
    let nsu = nb.y / b - nb.x / b + 1u;
    let r = e / 4u;
    var seg = nb.z / b + (r - nsu);
    if r < nsu {
        seg = nb.x / b + r;
    }
    return segments[seg].cp[e % 4u];
}

// 1 when raw[e] is the first occurrence of its value (loop bound: e < MAX_BOX_CPS).
fn raw_is_first(e: u32) -> u32 {
    for (var e2 = 0u; e2 < e; e2 = e2 + 1u) {
        if raw[e2] == raw[e] {
            return 0u;
        }
    }
    return 1u;
}

// Fills `raw` with box nb's raw control points and `is_first` with their first-occurrence flags,
// `stride` threads of the workgroup at a time (thread lid), with a barrier after each; returns the
// raw count (the caller ensures ≤ MAX_BOX_CPS). Loop bound: nraw / stride per pass, and
// raw_is_first's nraw per entry.
fn box_raw_points(nb: vec4<u32>, lid: u32, stride: u32) -> u32 {
    let nraw = raw_count(nb);
    for (var e = lid; e < nraw; e = e + stride) {
        raw[e] = raw_cp(nb, e);
    }
    workgroupBarrier();
    for (var e = lid; e < nraw; e = e + stride) {
        is_first[e] = raw_is_first(e);
    }
    workgroupBarrier();
    return nraw;
}

// Set-local index of control point c: the number of distinct raw points below it (loop bound:
// nraw ≤ MAX_BOX_CPS).
fn local_index(c: u32, nraw: u32) -> u32 {
    var n = 0u;
    for (var e = 0u; e < nraw; e = e + 1u) {
        if is_first[e] != 0u && raw[e] < c {
            n = n + 1u;
        }
    }
    return n;
}
