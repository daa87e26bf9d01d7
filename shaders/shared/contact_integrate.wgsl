// contact_integrate: one control point's obstacle contact (object_contact's velocity update, for a
// free point while obstacles are placed) and then q += h v (integrate_position), shared by
// object_contact_integrate and nonrigid_damping_integrate. The importing kernel declares `params`,
// `obstacles`, `inv_mass`, `pos` and `vel` (both read_write). Loop bound:
// params.num_obstacles iterations (object_velocity's).

#import object_velocity

fn contact_integrate(p: u32) {
    let q = pos[p];
    var v = vel[p].xyz;
    if params.num_obstacles != 0u && inv_mass[p] != 0.0 {
        v = object_contact_velocity(q.xyz, v);
        vel[p] = vec4<f32>(v, 0.0);
    }
    pos[p] = vec4<f32>(q.xyz + params.h * v, q.w);
}
