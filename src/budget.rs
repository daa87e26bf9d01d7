//! Budgets the GPU step records per step and cuts on trial: ACL's rebuild rounds
//! ([`crate::acl::gpu::AclGpu::fewer_rounds`]), its coalescing stage and its scheduler's newcomer
//! search and the set index of the first merge pass after a rebuild round (each recorded or not:
//! [`crate::acl::gpu::AclGpu::fewer_coalesce`], [`crate::acl::gpu::AclGpu::fewer_newcomers`],
//! [`crate::acl::gpu::AclGpu::fewer_indexed`]) and the length projection's iterations
//! ([`crate::gpu_step::LENGTH_BUDGET`]). A recorded step cannot skip its dispatches, so each unused
//! round or iteration still costs its barriers; the host therefore records fewer after a quiet
//! stretch, from the counts it reads back after each batch (no GPU buffer of its own). A step that
//! then needs more reruns its batch with more, so the result never depends on the budget. A
//! stretch is counted in whatever unit its owner passes: ACL's cuts count steps (batches are
//! shorter while one of them is on trial, see [`crate::gpu_step::TRIAL_BATCH`]), the length
//! budget's cut counts batches.

/// The wait before the next trial cut of a budget, after a cut that held `held` (completed steps
/// or batches, as its owner counts) had to be raised again (a step needed more) when the wait
/// before it was `after` (the first wait `first`, at most `max`): a cut that held at least as long
/// as the wait before it starts the waits over from `first`; one that held less doubles the wait.
///
/// Why: a failed cut costs one batch rerun with the budget raised, and the wait costs `after`
/// steps at the raised budget, while the cut saved its share of every step it held. At rest
/// the steps that need more are rare but never absent: on the H200 the relaxed scarf's cuts of
/// the merge passes and the rebuild rounds held for 36–80 batches of 64 steps before one step
/// needed more, and with doubling after every failure its waits grew past a hundred batches, so
/// the budgets stayed raised for most of the run (`benches/results/2026-11-27-h200-scarf-runs.jsonl`).
/// A scene whose cuts keep failing soon (a cloth in motion) still backs off to the most.
pub fn wait_after_raise(after: u32, held: u32, first: u32, max: u32) -> u32 {
    if held >= after {
        first
    } else {
        (2 * after).min(max)
    }
}

/// The quiet-stretch rule of one budget: after a stretch of `after` (steps or batches, in the unit
/// its owner passes to [`QuietCut::completed`]) completed in a row whose steps all used fewer than
/// the budget, cut it to the most any of them used (at least a floor, 1 unless set); after a cut
/// that did not last (the budget had to be raised again), the next waits as [`wait_after_raise`]
/// says (twice as long, up to a most, unless the cut held at least as long as its wait).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QuietCut {
    /// The quiet stretch so far (completed in a row using less than the budget), and the most its
    /// steps used.
    quiet: u32,
    most: u32,
    /// The quiet stretch before a cut, and before the first.
    after: u32,
    first: u32,
    /// Whether the last change of the budget was a cut, and what completed since it.
    last_was_cut: bool,
    held: u32,
    /// The least a cut leaves.
    floor: u32,
}

impl QuietCut {
    /// Cuts after a quiet stretch of `after` at first, to at least 1.
    pub fn new(after: u32) -> QuietCut {
        QuietCut::with_floor(after, 1)
    }

    /// Cuts after a quiet stretch of `after` at first, to at least `floor` (0: a stage that can
    /// be left out altogether).
    pub fn with_floor(after: u32, floor: u32) -> QuietCut {
        QuietCut {
            quiet: 0,
            most: 0,
            after,
            first: after,
            last_was_cut: false,
            held: 0,
            floor,
        }
    }

    /// A batch completed, `len` long (1 for an owner that counts batches, its steps for one that
    /// counts steps), whose steps used at most `used` of `budget`: the budget to record from now
    /// on, when this ends a quiet stretch long enough and that is less than `budget`.
    pub fn completed(&mut self, used: u32, budget: u32, len: u32) -> Option<u32> {
        self.held = self.held.saturating_add(len);
        if used >= budget {
            self.restart();
            return None;
        }
        self.quiet = self.quiet.saturating_add(len);
        self.most = self.most.max(used);
        if self.quiet < self.after {
            return None;
        }
        let cut = self.most.max(self.floor);
        self.restart();
        let cut = (cut < budget).then_some(cut)?;
        self.last_was_cut = true;
        self.held = 0;
        Some(cut)
    }

    /// The budget was raised because a step needed more: if that undoes a cut, the next cut waits
    /// as [`wait_after_raise`] says (at most `max`).
    pub fn raised(&mut self, max: u32) {
        if self.last_was_cut {
            self.after = wait_after_raise(self.after, self.held, self.first, max);
        }
        self.last_was_cut = false;
        self.restart();
    }

    /// Starts counting the quiet stretch again (the budget was set from outside).
    pub fn restart(&mut self) {
        self.quiet = 0;
        self.most = 0;
    }

    /// The quiet stretch the next cut waits for.
    pub fn after(&self) -> u32 {
        self.after
    }

    /// Whether the budget's last change was a cut that still holds (a trial: a step may yet need
    /// more and rerun its batch).
    pub fn on_trial(&self) -> bool {
        self.last_was_cut
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuts_after_a_quiet_stretch_and_backs_off_after_a_failed_cut() {
        let mut q = QuietCut::new(3);
        // Two quiet batches, then one that used the whole budget: no cut, the count restarts.
        assert_eq!(q.completed(1, 4, 1), None);
        assert_eq!(q.completed(2, 4, 1), None);
        assert_eq!(q.completed(4, 4, 1), None);
        assert_eq!(q.completed(1, 4, 1), None);
        assert_eq!(q.completed(2, 4, 1), None);
        // The third quiet batch in a row: cut to the most they used.
        assert_eq!(q.completed(1, 4, 1), Some(2));
        // A step needs more again, in the first batch after the cut: the next cut waits twice
        // as long.
        q.raised(16);
        assert_eq!(q.after(), 6);
        for _ in 0..5 {
            assert_eq!(q.completed(0, 4, 1), None);
        }
        // At least 1, even when nothing was used.
        assert_eq!(q.completed(0, 4, 1), Some(1));
        // Already at the cut: nothing to do, and a raise that undoes no cut does not back off.
        q.raised(16);
        q.raised(16);
        assert_eq!(q.after(), 12);
        for _ in 0..12 {
            assert_eq!(q.completed(0, 1, 1), None);
        }
        assert_eq!(q.after(), 12);
        // The back-off stops at its most.
        let mut q = QuietCut::new(3);
        for want in [6, 12, 16, 16] {
            for _ in 1..q.after() {
                assert_eq!(q.completed(0, 2, 1), None);
            }
            assert_eq!(q.completed(0, 2, 1), Some(1));
            q.raised(16);
            assert_eq!(q.after(), want);
        }
        // A floor of 0: a budget of 1 (a stage recorded or not) is cut to 0 after a stretch in
        // which no step used it, and not while one did.
        let mut q = QuietCut::with_floor(2, 0);
        assert_eq!(q.completed(0, 1, 1), None);
        assert_eq!(q.completed(1, 1, 1), None);
        assert_eq!(q.completed(0, 1, 1), None);
        assert_eq!(q.completed(0, 1, 1), Some(0));
        q.raised(16);
        assert_eq!(q.after(), 4);
    }

    #[test]
    fn a_cut_that_held_as_long_as_its_wait_starts_the_waits_over() {
        let mut q = QuietCut::new(3);
        // A cut, undone at once: the wait doubles to 6, then to 12.
        for want in [6, 12] {
            for _ in 1..q.after() {
                assert_eq!(q.completed(0, 2, 1), None);
            }
            assert_eq!(q.completed(0, 2, 1), Some(1));
            q.raised(64);
            assert_eq!(q.after(), want);
        }
        // The next cut holds 11 batches (fewer than its wait of 12): the wait doubles again.
        for _ in 1..12 {
            assert_eq!(q.completed(0, 2, 1), None);
        }
        assert_eq!(q.completed(0, 2, 1), Some(1));
        for _ in 0..11 {
            assert_eq!(q.completed(1, 1, 1), None);
        }
        q.raised(64);
        assert_eq!(q.after(), 24);
        // The next holds 24 batches, as long as its wait: the waits start over at 3.
        for _ in 1..24 {
            assert_eq!(q.completed(0, 2, 1), None);
        }
        assert_eq!(q.completed(0, 2, 1), Some(1));
        for _ in 0..24 {
            assert_eq!(q.completed(1, 1, 1), None);
        }
        q.raised(64);
        assert_eq!(q.after(), 3);
        assert_eq!(wait_after_raise(8, 7, 8, 1024), 16);
        assert_eq!(wait_after_raise(8, 8, 8, 1024), 8);
        assert_eq!(wait_after_raise(1024, 3, 8, 1024), 1024);
    }

    #[test]
    fn a_stretch_counted_in_steps_adds_up_its_batches() {
        let mut q = QuietCut::new(64);
        assert!(!q.on_trial());
        // Batches of 1, 2, 4, …, 32 steps: 63 quiet steps, no cut yet; one more step ends the
        // stretch, and the cut is the most any of them used.
        for len in [1, 2, 4, 8, 16, 32] {
            assert_eq!(q.completed(0, 2, len), None);
        }
        assert_eq!(q.completed(1, 2, 1), Some(1));
        assert!(q.on_trial());
        // Undone after 16 steps, fewer than its wait of 64: the next waits 128 steps.
        assert_eq!(q.completed(1, 1, 16), None);
        q.raised(65_536);
        assert!(!q.on_trial());
        assert_eq!(q.after(), 128);
        // A batch that used the whole budget starts the stretch over, however long the quiet
        // batches before it were.
        assert_eq!(q.completed(0, 2, 100), None);
        assert_eq!(q.completed(2, 2, 1), None);
        assert_eq!(q.completed(0, 2, 127), None);
        assert_eq!(q.completed(0, 2, 1), Some(1));
    }
}
