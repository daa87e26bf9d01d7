// object_velocity: one control point's velocity-level contact with the placed obstacles
// (object_contact's per-point work, which object_contact_integrate repeats before integrating the
// position): for each obstacle in order, if q + h v lies closer than the yarn radius to its surface,
// the inward normal relative velocity is removed, the tangential one shrinks by friction × the
// removed normal speed (never reversing), then the normal velocity that puts q + h v at distance r
// is added. The importing kernel declares `params` and `obstacles` as object_contact does.
// Loop bound: params.num_obstacles iterations.

#import vec
#import obstacle

fn object_contact_velocity(q: vec3<f32>, v0: vec3<f32>) -> vec3<f32> {
    let h = params.h;
    let radius = params.radius;
    var v = v0;
    for (var j = 0u; j < params.num_obstacles; j++) {
        let o = obstacles[j];
        let x = q + v * h;
        let hit = obstacle_distance(o, x);
        if hit.d >= radius {
            continue;
        }
        let vo = obstacle_velocity(o, x);
        let rel = v - vo;
        let vn = dot3(rel, hit.n);
        if vn < 0.0 {
            let vt = rel - hit.n * vn;
            let vtn = sqrt(dot3(vt, vt));
            var keep = 0.0;
            if vtn > 0.0 {
                keep = max(1.0 - o.friction * (-vn) / vtn, 0.0);
            }
            v = vo + vt * keep;
        }
        let out = obstacle_distance(o, q + v * h);
        if out.d < radius {
            v = v + out.n * ((radius - out.d) / h);
        }
    }
    return v;
}
