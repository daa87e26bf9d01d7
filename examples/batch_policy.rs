//! A model of the GPU step's batch and budget policy, replayed over the events of a CPU run: which
//! steps would rerun, and how many dispatches a step would cost, under the quiet-stretch cuts of
//! ACL's budgets ([`yarnsim::budget::QuietCut`]), the batch lengths of `GpuSim::advance` and its
//! one-step upgrades, for a sweep of the policy's two knobs (the quiet wait before a cut, in
//! steps, and the most steps of a batch while a budget is on trial) and for the policy before
//! 2026-12-05 (waits of 8 batches, batches of up to 64 steps throughout).
//!
//! Input: the output of `examples/acl_budgets` (lines `step rounds merge_passes new_pairs entered
//! …`; a step not listed had none of the events). The events, each a stage a cut leaves out:
//! a second rebuild round or merge pass (the rounds, passes and label rounds, raised together, as
//! such a step needs them on the GPU), new touching pairs (coalescing), a segment entering a cell
//! (the newcomer search). The set index's cut is left out of the model (its criterion needs
//! counts `acl_budgets` does not print; at rest it stays cut).
//!
//! Costs, in dispatches recorded per step (the GPU step is bound by them): `--cost
//! cut,coalesce,rounds,newcomers,both` (defaults: the relaxed scarf's counts from
//! `examples/dispatch_count`, set capacity 40,000: 45 with every budget cut, 10 more for
//! coalescing, 20 for the second round with its passes and label rounds, 36 for the newcomer
//! search through the grid, 6 more when coalescing and the second round are both recorded; the
//! listed newcomer search, which serves a step on which a few segments enter a cell, is 2: `--cost
//! 45,10,20,2,6`); an upgraded step records every stage. Each batch attempt (a failed one too) costs one readback, counted as
//! `--sync N` dispatches (default 30 and 100: unmeasured on hardware, so both).
//!
//! What it leaves out: capacity growths (their reruns start the batches over in both policies
//! alike) and the length budget. It is a model: the figures compare policies, a run's own
//! `--stats` (`dispatches_run_per_step`) measures one.
//!
//! Usage: `cargo run --release --example batch_policy -- EVENTS.txt STEPS [--sync N]...
//! [--cost a,b,c,d,e]`.

use yarnsim::budget::QuietCut;
use yarnsim::gpu_step::{FIRST_BATCH, MAX_BATCH, MAX_UPGRADES, TRIAL_BATCH, UPGRADE_AFTER_CLEAN};

/// Stages a step may need, as bits: coalescing, the second round, the newcomer search.
const COALESCE: u8 = 1;
const ROUNDS: u8 = 2;
const NEWCOMERS: u8 = 4;
const ALL: u8 = 7;

/// Dispatches a step records with the stages `b`.
struct Costs([u32; 5]);

impl Costs {
    fn of(&self, b: u8) -> u64 {
        let [cut, c, r, n, both] = self.0;
        let has = |bit: u8| (b & bit != 0) as u32;
        (cut + c * has(COALESCE)
            + r * has(ROUNDS)
            + n * has(NEWCOMERS)
            + both * has(COALESCE) * has(ROUNDS)) as u64
    }
}

/// One policy: the quiet wait before a cut (in steps, or in batches when `in_batches`) and the
/// most steps of a batch while a stage is cut.
struct Policy {
    wait: u32,
    in_batches: bool,
    trial_batch: usize,
}

struct Outcome {
    per_step: f64,
    reruns: u32,
    wasted: u64,
}

fn replay(events: &[u8], costs: &Costs, sync: u64, p: &Policy) -> Outcome {
    let mut recorded = ALL;
    let mut cuts = [QuietCut::with_floor(p.wait, 0); 3];
    let mut on_trial = [false; 3];
    let (mut limit, mut clean, mut t) = (FIRST_BATCH, 0u32, 0usize);
    let (mut cost, mut reruns, mut wasted) = (0u64, 0u32, 0u64);
    while t < events.len() {
        let cap = if on_trial.iter().any(|&x| x) {
            p.trial_batch
        } else {
            MAX_BATCH
        };
        let k = limit.min(cap).min(events.len() - t);
        let batch = &events[t..t + k];
        let mut upgraded: Vec<usize> = Vec::new();
        let (mut attempts_rerun, mut upgrades) = (0, 0);
        loop {
            let stages = |s: usize| if upgraded.contains(&s) { ALL } else { recorded };
            cost += sync + (0..k).map(|s| costs.of(stages(s))).sum::<u64>();
            let Some(fail) = (0..k).find(|&s| batch[s] & !stages(s) != 0) else {
                break;
            };
            reruns += 1;
            attempts_rerun += 1;
            wasted += k as u64;
            let others = upgraded.iter().filter(|&&s| s != fail).count();
            if others < MAX_UPGRADES && clean >= UPGRADE_AFTER_CLEAN {
                upgraded.push(fail);
                upgrades += 1;
            } else {
                let need = batch[fail];
                for i in 0..3 {
                    if need & (1 << i) != 0 && recorded & (1 << i) == 0 {
                        cuts[i].raised(yarnsim::acl::gpu::CUT_AFTER_STEPS_MAX);
                        on_trial[i] = false;
                    }
                }
                recorded |= need;
                clean = 0;
            }
        }
        clean = if attempts_rerun == 0 { clean + 1 } else { 0 };
        limit = if attempts_rerun > upgrades {
            FIRST_BATCH
        } else if upgrades > 0 {
            (limit / 2).max(FIRST_BATCH)
        } else if k >= limit {
            (2 * limit).min(MAX_BATCH)
        } else {
            limit
        };
        for i in 0..3 {
            let bit = 1u8 << i;
            let used = batch.iter().any(|e| e & bit != 0) as u32;
            let len = if p.in_batches { 1 } else { k as u32 };
            let budget = (recorded & bit != 0) as u32;
            if cuts[i].completed(used, budget, len) == Some(0) {
                recorded &= !bit;
                on_trial[i] = true;
                clean = 0;
            }
        }
        let cap = if on_trial.iter().any(|&x| x) {
            p.trial_batch
        } else {
            MAX_BATCH
        };
        limit = limit.min(cap);
        t += k;
    }
    Outcome {
        per_step: cost as f64 / events.len() as f64,
        reruns,
        wasted,
    }
}

fn main() -> anyhow::Result<()> {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let mut syncs = Vec::new();
    let mut costs = Costs([45, 10, 20, 36, 6]);
    while let Some(i) = args.iter().position(|a| a == "--sync" || a == "--cost") {
        let v = args.remove(i + 1);
        if args.remove(i) == "--sync" {
            syncs.push(v.parse::<u64>()?);
        } else {
            let v: Vec<u32> = v.split(',').map(|x| x.parse()).collect::<Result<_, _>>()?;
            costs.0 = v
                .try_into()
                .map_err(|_| anyhow::anyhow!("--cost takes 5 numbers"))?;
        }
    }
    if syncs.is_empty() {
        syncs = vec![30, 100];
    }
    let path = args
        .first()
        .ok_or_else(|| anyhow::anyhow!("usage: batch_policy EVENTS.txt STEPS"))?;
    let steps: usize = args
        .get(1)
        .ok_or_else(|| anyhow::anyhow!("usage: batch_policy EVENTS.txt STEPS"))?
        .parse()?;
    let mut events = vec![0u8; steps];
    let text = std::fs::read_to_string(path)?;
    for (n, line) in text.lines().enumerate() {
        let f: Vec<&str> = line.split_whitespace().collect();
        let Some(Ok(step)) = f.first().map(|s| s.parse::<usize>()) else {
            continue;
        };
        if step >= steps {
            continue;
        }
        let num = |i: usize| -> anyhow::Result<u32> {
            let s = f
                .get(i)
                .ok_or_else(|| anyhow::anyhow!("{path}:{}: field {} missing", n + 1, i + 1))?;
            s.parse()
                .map_err(|e| anyhow::anyhow!("{path}:{}: field {}: {e}", n + 1, i + 1))
        };
        let (rounds, passes, pairs, entered) = (num(1)?, num(2)?, num(3)?, num(4)?);
        let mut e = 0;
        if rounds > 1 || passes > 1 {
            e |= ROUNDS;
        }
        if pairs > 0 {
            e |= COALESCE;
        }
        if entered > 0 {
            e |= NEWCOMERS;
        }
        events[step] = e;
    }
    let count = |bit: u8| events.iter().filter(|&&e| e & bit != 0).count();
    println!(
        "{path}: {steps} steps; a second round or pass on {}, new pairs on {}, a segment entering a cell on {}",
        count(ROUNDS),
        count(COALESCE),
        count(NEWCOMERS)
    );
    println!("every stage held: {} dispatches a step", costs.of(ALL));
    for sync in syncs {
        println!("a readback counted as {sync} dispatches:");
        let old = Policy {
            wait: 8,
            in_batches: true,
            trial_batch: MAX_BATCH,
        };
        let o = replay(&events, &costs, sync, &old);
        println!(
            "  before (8 quiet batches, batches up to {MAX_BATCH}): {:.1} dispatches a step, {} reruns wasting {} steps",
            o.per_step, o.reruns, o.wasted
        );
        for trial_batch in [8, 16, 32, 64] {
            let row: Vec<String> = [16, 32, 64, 128, 256]
                .iter()
                .map(|&wait| {
                    let p = Policy {
                        wait,
                        in_batches: false,
                        trial_batch,
                    };
                    let o = replay(&events, &costs, sync, &p);
                    let mark = if wait == yarnsim::acl::gpu::CUT_AFTER_STEPS
                        && trial_batch == TRIAL_BATCH
                    {
                        "*"
                    } else {
                        ""
                    };
                    format!("wait {wait}: {:.1}{mark} ({} reruns)", o.per_step, o.reruns)
                })
                .collect();
            println!("  trial batches of {trial_batch}: {}", row.join(", "));
        }
    }
    println!("(* the library's constants)");
    Ok(())
}
