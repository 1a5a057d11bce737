"""Run-control flags (`config.RunConfig`): none of them changes results."""

from absl import flags


def define_flags() -> None:
  """Defines the run section's flags (idempotent)."""
  if "overwrite" in flags.FLAGS:
    return
  flags.DEFINE_bool("overwrite", False, "Delete the results already in "
                    "<root_output_dir>/<experiment_name> and start over "
                    "(needed to rerun a directory with other settings).")
  flags.DEFINE_enum("on_divergence", "stop", ["stop", "continue"],
                    "A round with non-finite values (clients dropped as "
                    "non-finite, non-finite loss, model or evaluation): stop "
                    "the run (exit status 3) or count and log it.")
  flags.DEFINE_bool("resume_from_last_valid", False, "If the latest "
                    "checkpoint cannot be read, move it to checkpoints/corrupt/"
                    " and resume from the previous readable one.")
