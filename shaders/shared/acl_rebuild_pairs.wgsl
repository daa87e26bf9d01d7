// acl_rebuild_pairs: the member test of a quadrature pair in ACL's rebuild kernels. Needs layout,
// vec and penalty; the importing kernel binds `rebuild`, `qpts`, `segments` and `seg_contact`.

// Whether (i, j) is a member pair: j > i and not excluded by the same-yarn rule
// (contact::Exclusion::excluded, from the arc positions in qpts.w).
fn pair_member(i: u32, j: u32) -> bool {
    if j <= i {
        return false;
    }
    let b = rebuild.b;
    let sa = i / b;
    let sb = j / b;
    return !(segments[sa].yarn == segments[sb].yarn
        && arc_excluded(qpts[i].w, qpts[j].w, seg_contact[sa].loop_len, rebuild.exclusion_arc));
}

// d² of member pair (i, j), or -1 when it is no member.
fn member_d2(i: u32, j: u32) -> f32 {
    if !pair_member(i, j) {
        return -1.0;
    }
    let x = qpts[i].xyz - qpts[j].xyz;
    return dot3(x, x);
}
