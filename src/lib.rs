//! yarnsim: yarn-level simulation of knitted cloth with adaptive contact linearization.
//!
//! The CPU reference path lives in the stage modules below; the GPU path (`gpu`) runs the same stages as
//! WGSL kernels of the same names. See `DESIGN.md` in the steering repository for the vocabulary.

pub mod acl;
pub mod balls;
pub mod bcc;
pub mod budget;
pub mod checkpoint;
pub mod contact;
pub mod export;
pub mod figure;
pub mod gpu;
pub mod gpu_step;
pub mod import;
pub mod input;
pub mod interrupt;
pub mod knit;
pub mod layout;
pub mod length;
pub mod links;
pub mod math;
pub mod output;
pub mod pipelines;
pub mod polar;
pub mod relax;
pub mod render;
pub mod rod;
pub mod scan;
pub mod scene;
pub mod sched;
pub mod shaders;
pub mod sim;
pub mod sort;
pub mod spline;
pub mod state;
pub mod step;
pub mod table;
pub mod ties;
pub mod wgsl;
