// pool_page: which of a paged pool's entries a dispatch over one of its pages acts for
// (acl::pages::PoolPage; the layout is in src/acl/pages.rs): the K̄ blocks pool (uniform
// block_page), the rebuild's pair terms (uniform term_page), its watched-pair scratch by dirty
// index (uniform scratch_page: `stride` dirty sets a page, MAX_WATCH slots each) and the watch
// pools (uniform watch_pool_page; set_rebuild_watch takes both in watch_pages). Needs layout. An
// entry range lives in page off / stride, at off − page · stride; with one page the stride is
// 0xffffffff and every range is page 0's.

// Whether the range that starts at off lives in page p.page (the page bound).
fn page_holds(p: PoolPage, off: u32) -> bool {
    return off / p.stride == p.page;
}

// The flat offset of page p.page's first entry (page 0: 0 whatever the stride).
fn page_base(p: PoolPage) -> u32 {
    return p.page * p.stride;
}

// Whether the range of n entries from off lives in page p.page: an empty one (a set without
// watched pairs, whose offset may be the pool's end, past every page) in page 0.
fn page_holds_range(p: PoolPage, off: u32, n: u32) -> bool {
    if n == 0u {
        return p.page == 0u;
    }
    return page_holds(p, off);
}

// pool_compact_blocks: the same for the old pool's page p.source.
fn page_source_holds(p: PoolPage, off: u32) -> bool {
    return off / p.stride == p.source;
}

fn page_source_base(p: PoolPage) -> u32 {
    return p.source * p.stride;
}
