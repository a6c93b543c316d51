// SPDX-License-Identifier: GPL-2.0

//! `job` (plug-in 3): job registration, as ZOID's job hooks.
//!
//! A CN program registers the start and the end of a job; the ION runs its
//! job script (if one is configured) once per job: with `1` when the first
//! CN starts it and with `0` when the last one ends it, with the job's
//! description in `ZOID_JOB_*` environment variables.

zoid_plugin! {
    zoid = super::super;
    plugin(id = 3, name = "job");

    /// Job `id` starts on the calling CN: `exec` is the program, `args` its
    /// arguments, `global_size` the processes in the whole job,
    /// `local_size` those on this CN, `mode` the execution mode (e.g.
    /// `SMP`, `VN`).  Returns the number of CNs in the job now; the first
    /// start runs the job script, whose non-zero exit fails the call with
    /// `EIO`.
    fn job_start(id: in u32, exec: in str, args: in str, global_size: in u32, local_size: in u32, mode: in str) = 1;

    /// Job `id` ends on the calling CN.  Returns the number of CNs still in
    /// the job; the last end runs the job script with `0`.  `ENOENT` if the
    /// CN had not started the job.
    fn job_end(id: in u32) = 2;
}
