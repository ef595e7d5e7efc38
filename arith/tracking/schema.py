"""The record of a sweep in MLflow, named once: the tags a sweep's parent run and its trials carry, the
artifacts a trial writes and their columns. `arith.tracking` and `arith.training` write it, `sweeps` sets
its tags, `experiments` and `analysis` read it back; no other module spells a tag name or a column list.
Plain constants and the paper table tag's pair of functions (its one writer and reader), no imports:
`analysis` and `experiments` read it without torch or mlflow. `tests/test_schema.py` checks that no other
module spells a tag name or a column of a trial's record.
"""

from __future__ import annotations

# ---------------------------------------------------------------------------------------------------------
# The experiment
# ---------------------------------------------------------------------------------------------------------

#: MLflow 3's experiment tag that chooses its UI's view, and the value of a model-training experiment
#: (the UI's "custom_model_development"; without it MLflow 3 opens an experiment as a GenAI app)
EXPERIMENT_KIND_TAG = "mlflow.experimentKind"
EXPERIMENT_KIND = "custom_model_development"

# ---------------------------------------------------------------------------------------------------------
# Tags: a sweep's parent run (sweep_tags in sweeps.storage) and each trial (sweeps.space)
# ---------------------------------------------------------------------------------------------------------

#: MLflow's tag nesting a trial's run under its sweep's parent run
PARENT_RUN_TAG = "mlflow.parentRunId"
#: "1" on a sweep's parent run; the grid and scale it ran (on the parent and on every trial); the commit
SWEEP_TAG, GRID_TAG, SCALE_TAG, COMMIT_TAG = "sweep", "grid", "scale", "git_commit"
#: the parent's JSON tags: paper digit count -> this scale's, the grid's declared axes, the seeds of the
#: pre-search that chose its budget; and the grid a variant grid is judged as
DIGIT_MAP_TAG, AXES_TAG, PRESEARCH_SEEDS_TAG = "digit_map", "axes", "presearch_seeds"
VARIANT_OF_TAG = "variant_of"
#: how a trial's bf16 products were computed: "native", "fp32 kernels" (a CPU without bf16 hardware) or "none"
BF16_MATMULS_TAG = "bf16_matmuls"
#: each process that trained a trial (`arith.training.sessions`): its machine, bf16 kernels, steps and CPU
#: time, as JSON (what the analysis reads) and as one line for the MLflow UI
SESSIONS_TAG, TRAINED_ON_TAG = "trial_sessions", "trained_on"
#: a trial's trained weights as one sha256 (`arith.training.checkpoints.weights_digest`): two runs that
#: trained bit for bit alike (a trial under Ray and its config rerun alone, a resumed trial and a straight
#: one) carry the same digest, and a digest that differs says they did not, whatever their metrics read
WEIGHTS_DIGEST_TAG = "weights_sha256"
#: the metric a trial reports after every epoch: its process's CPU seconds so far (every thread, summed
#: across restores; `arith.training.train.TrainState.cpu_seconds`), the clock of a recipe search
CPU_SECONDS = "cpu_seconds"
#: the weakest of the cells a trial's competence gate reads (`train.gate_cells`), on the problems it was
#: not trained on, logged at every evaluation (`arith.training.metrics.weakest_unseen`): what an early
#: stopper reads
GATE_METRIC = "gate/weakest_unseen"
#: a trial's seed and point (the grid point's name, e.g. "format=basic")
SEED_TAG, POINT_TAG = "seed", "point"
#: MLflow's tag of a run's colour in its UI's charts (a hex string; the UI's colour picker writes it too):
#: each trial's is its point's colour in POINT_COLOURS (by the point's place in its grid), every seed of a
#: point alike, and the report's figures draw the point in the same colour. Matplotlib's "tab10" (its
#: default C0..C9): ten colours told apart at a glance, where the UI's own colours for groups (a hash of
#: the group's name into a palette of 29) may give two points near-identical reds.
RUN_COLOR_TAG = "mlflow.runColor"
#: a run's description in the MLflow UI (markdown): a sweep's parent run shows the command that started it,
#: so that two sweeps of one grid (the plan's parts: other seeds, other --only values) are told apart
RUN_DESCRIPTION_TAG = "mlflow.note.content"
POINT_COLOURS: tuple[str, ...] = (
    *("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd"),
    *("#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"),
)
#: a trial's paper table label(s) (comma-separated; "none") and its JSON map from each evaluated epoch to
#: the paper's epoch count it stands for; the analysis reads both as columns of the same names
PAPER_TABLE_TAG, PAPER_EPOCHS_TAG = "paper_table", "paper_epochs"
#: the paper table tag of a trial that stands for no paper table
NO_PAPER_TABLE = "none"


def paper_table_tag(labels: tuple[str, ...] | list[str]) -> str:
    """A trial's paper table labels as its tag (the format archived sweeps hold): comma-separated,
    `NO_PAPER_TABLE` for none."""
    return ",".join(labels) or NO_PAPER_TABLE


def paper_labels(tag: str) -> tuple[str, ...] | None:
    """The labels a paper table tag names, the one place the tag is split: () for `NO_PAPER_TABLE`, None
    for a trial without the tag (older sweeps: the paper's table is then found by its settings)."""
    if not tag:
        return None
    return tuple(label for label in (t.strip() for t in tag.split(",")) if label and label != NO_PAPER_TABLE)


# ---------------------------------------------------------------------------------------------------------
# The columns of a trial's record: its frames (trials, cells, errors) and the artifacts they are read from
# ---------------------------------------------------------------------------------------------------------

#: the MLflow run id of a trial, the column joining its cells and wrong answers to it
RUN_ID_COLUMN = "run_id"
#: the trials and cells frames name a trial's seed and point by their tags
SEED_COLUMN, POINT_COLUMN = SEED_TAG, POINT_TAG
#: the trials frame's colour of a trial (its RUN_COLOR_TAG; empty for sweeps from before the tag)
COLOUR_COLUMN = "colour"
#: a cell of the test grid: its context (e.g. "regular", "main") and digit counts
CONTEXT_COLUMN, ROW_DIGITS_COLUMN, COL_DIGITS_COLUMN = "context", "row_digits", "col_digits"
#: a cell's problems, those answered right, their ratio, and the share of its problems seen in training
N_COLUMN, CORRECT_COLUMN, ACCURACY_COLUMN, SEEN_IN_TRAIN_COLUMN = "n", "correct", "accuracy", "seen_in_train"
#: the problems of a cell also in training, and its accuracy on those and on the rest
N_SEEN_COLUMN, ACCURACY_SEEN_COLUMN, ACCURACY_UNSEEN_COLUMN = "n_seen", "accuracy_seen", "accuracy_unseen"
#: the evaluation a row of eval/cells.csv and eval/errors.csv is from (their first column), and the analysis's
#: cells frame's last evaluated epoch of the row's trial
EPOCH_COLUMN, FINAL_EPOCH_COLUMN = "epoch", "final_epoch"
#: a kept wrong answer's operands (b is empty for one-operand tasks), prompt, expected answer and reply
A_COLUMN, B_COLUMN = "a", "b"
#: the largest operand pandas' nullable Int64 holds: a length test's longer numbers stay Python ints
INT64_MAX = 2**63 - 1
PROMPT_COLUMN, EXPECTED_COLUMN, REPLY_COLUMN = "prompt", "expected", "reply"

# ---------------------------------------------------------------------------------------------------------
# Params and artifacts of a trial
# ---------------------------------------------------------------------------------------------------------

#: the params that are a trial's seeds: a point is every other param fixed
SEED_KEYS: tuple[str, ...] = ("data.seed", "train.seed")
#: a trial's trained model (`tracking.log_model`: its artifact path, `runs:/<run id>/model`, which
#: `arith.tracking.store` resolves to the run's logged model, named by point and seed: `model_name`) and
#: the trial's config saved beside it, what `arith.ask` renders problems with
MODEL_ARTIFACT, EXPERIMENT_CONFIG = "model", "experiment_config.json"


def point_label(point: str) -> str:
    """A grid point's name as a researcher says it, its axes' values: `format=padding_reverse` ->
    `padding_reverse`, `position=none,init=random` -> `none_random` (distinct within a grid, as the points
    are; fit for an MLflow metric key and a logged model's name, which take no `=` or `,`)."""
    return "_".join(part.partition("=")[2] or part for part in point.split(",") if part)


#: what MLflow refuses in a logged model's name, and what stands for it (`lr=0.003` -> `0p003`)
MODEL_NAME_REFUSES = {".": "p", "/": "-", ":": "-", "%": "-", '"': "", "'": ""}


def model_name(point: str, seed: int | str) -> str:
    """A trial's logged model's name in the MLflow UI's Models page: `padding_reverse-seed0`."""
    name = f"{point_label(point)}-seed{seed}"
    return name.translate(str.maketrans(MODEL_NAME_REFUSES))


#: a trial of an offline sweep run with `--keep-weights`: the folder of its trained model, relative to its
#: archive's folder (an archive carries text, not weights; `arith.ask` finds them by it)
WEIGHTS_FOLDER_TAG = "weights_folder"
#: what names a cell of the test grid (row_digits is empty for one-dimensional tasks); a list, as pandas
#: reads a tuple as one label
CELL_KEYS: list[str] = [CONTEXT_COLUMN, ROW_DIGITS_COLUMN, COL_DIGITS_COLUMN]
#: each cell's accuracy split by whether its test problems are training problems too (empty where the
#: split is unknown: a test problem's membership in training was not recorded)
SPLIT_COLUMNS: tuple[str, ...] = (N_SEEN_COLUMN, ACCURACY_SEEN_COLUMN, ACCURACY_UNSEEN_COLUMN)
#: one evaluation's cells as the evaluator scores them; eval/cells.csv writes them after `epoch`
CELL_COLUMNS: tuple[str, ...] = (
    *CELL_KEYS,
    *(N_COLUMN, CORRECT_COLUMN, ACCURACY_COLUMN, SEEN_IN_TRAIN_COLUMN),
    *SPLIT_COLUMNS,
)
#: the columns of eval/cells.csv: the evaluation's epoch, then its cells
CELLS_CSV_COLUMNS: tuple[str, ...] = (EPOCH_COLUMN, *CELL_COLUMNS)
#: the last evaluation's kept wrong answers, the cell and operands of each; eval/errors.csv writes them
#: after `epoch`
ERROR_COLUMNS: tuple[str, ...] = (
    *CELL_KEYS,
    *(A_COLUMN, B_COLUMN, PROMPT_COLUMN, EXPECTED_COLUMN, REPLY_COLUMN),
)
#: the training loss each trial logs every few steps (arith.training.train): when a run last computed
LOSS_METRIC = "train/loss"
#: the accuracy a trial logs at each evaluation, over every test problem, and over the digit counts it
#: trained on and those beyond (`arith.training.metrics.summary_metrics`)
TEST_ACC_METRIC = "test_acc"
IN_RANGE_METRIC, BEYOND_METRIC = f"{TEST_ACC_METRIC}/in_range", f"{TEST_ACC_METRIC}/beyond"
#: a trial's evaluation artifacts: each evaluation's cells (CELLS_CSV_COLUMNS), the last one's kept wrong
#: answers (ERROR_COLUMNS after the epoch) and the trainer's log of failed decodings
CELLS_ARTIFACT, ERRORS_ARTIFACT = "eval/cells.csv", "eval/errors.csv"
FAILURES_ARTIFACT = "eval/failures.jsonl"
#: a sweep's parent run as its summary (`analysis.summary`, `sweeps.storage`): its params beside the grid
#: and scale (the seeds, the command that started it), the headline accuracies each point's seed mean is
#: logged for (`<point label>/<accuracy>`, with its 95% interval's ends as `.../ci95_low`, `.../ci95_high`),
#: and the prefix of its one tag a claim (`claim.<claim id>`, the claim's verdict)
SEEDS_PARAM, COMMAND_PARAM = "seeds", "command"
HEADLINE_METRICS: tuple[str, ...] = (TEST_ACC_METRIC, IN_RANGE_METRIC, f"{TEST_ACC_METRIC}/unseen")
CI_LOW_SUFFIX, CI_HIGH_SUFFIX = "ci95_low", "ci95_high"
CLAIM_TAG_PREFIX = "claim."
#: "learned": the accuracy a cell must reach on every seed (the verdicts' competence gate,
#: `experiments.verdicts.LEARNED`, and how far a model's length reach goes)
HELD_ACCURACY = 0.9
#: a length test's reach (`arith.training.metrics.length_reach`): the longest operand length up to which
#: every equal-length cell holds HELD_ACCURACY, and that plus the mean accuracy of the longer cells (what
#: a length search's scheduler ranks by: how far it holds, then how much it gets right beyond)
LONGEST_HELD_METRIC = "length/longest_held"
LENGTH_SCORE_METRIC = "length/score"


def operand_dtype(values) -> str:
    """The dtype of a column of operands: "Int64" where every one fits 64 bits, else "object" (Python
    ints, exact at any length)."""
    return "Int64" if all(v is None or v != v or abs(int(v)) <= INT64_MAX for v in values) else "object"
