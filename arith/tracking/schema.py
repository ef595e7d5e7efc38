"""The record of a sweep in MLflow, named once: the tags of a sweep's parent run and its trials, the
artifacts a trial writes and their columns. Plain constants (no imports), so `analysis` and `experiments`
read it without torch or mlflow; `tests/test_schema.py` checks that no other module spells them.
"""

from __future__ import annotations

#: MLflow 3's experiment tag choosing its UI's view: without it an experiment opens as a GenAI app
EXPERIMENT_KIND_TAG = "mlflow.experimentKind"
EXPERIMENT_KIND = "custom_model_development"

# --- Tags: a sweep's parent run (sweeps.storage) and each trial (sweeps.space) ---

PARENT_RUN_TAG = "mlflow.parentRunId"
#: "1" on a sweep's parent run; the grid and scale it ran (on the parent and every trial); the commit
SWEEP_TAG, GRID_TAG, SCALE_TAG, COMMIT_TAG = "sweep", "grid", "scale", "git_commit"
#: the parent's JSON tags (paper digit count -> this scale's, axes, pre-search seeds); a variant's grid
DIGIT_MAP_TAG, AXES_TAG, PRESEARCH_SEEDS_TAG = "digit_map", "axes", "presearch_seeds"
VARIANT_OF_TAG = "variant_of"
#: how a trial's bf16 products were computed: "native", "fp32 kernels" or "none"
BF16_MATMULS_TAG = "bf16_matmuls"
#: each process that trained a trial (`arith.training.sessions`), as JSON and as one line for the UI
SESSIONS_TAG, TRAINED_ON_TAG = "trial_sessions", "trained_on"
#: a trial's trained weights as one sha256: equal digests say two runs trained bit for bit alike
WEIGHTS_DIGEST_TAG = "weights_sha256"
#: the trial's process's CPU seconds after every epoch (summed across restores): a recipe search's clock
CPU_SECONDS = "cpu_seconds"
#: the weakest gated cell on problems not trained on (`arith.training.metrics.weakest_unseen`)
GATE_METRIC = "gate/weakest_unseen"
#: a trial's seed and point (the grid point's name, e.g. "format=basic")
SEED_TAG, POINT_TAG = "seed", "point"
#: a run's colour in the UI's charts: its point's in POINT_COLOURS (tab10, as the report draws it)
RUN_COLOR_TAG = "mlflow.runColor"
#: a run's description in the UI: a sweep's parent run shows the command that started it
RUN_DESCRIPTION_TAG = "mlflow.note.content"
POINT_COLOURS: tuple[str, ...] = (
    *("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd"),
    *("#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"),
)
#: a trial's paper table label(s) and its JSON map from each evaluated epoch to the paper's epoch count
PAPER_TABLE_TAG, PAPER_EPOCHS_TAG = "paper_table", "paper_epochs"
NO_PAPER_TABLE = "none"


def paper_table_tag(labels: tuple[str, ...] | list[str]) -> str:
    """A trial's paper table labels as its tag: comma-separated, `NO_PAPER_TABLE` for none."""
    return ",".join(labels) or NO_PAPER_TABLE


def paper_labels(tag: str) -> tuple[str, ...] | None:
    """The labels a paper table tag names: () for `NO_PAPER_TABLE`, None for a trial without the tag."""
    if not tag:
        return None
    return tuple(label for label in (t.strip() for t in tag.split(",")) if label and label != NO_PAPER_TABLE)


# --- The columns of a trial's record: its frames (trials, cells, errors) and artifacts ---

#: the MLflow run id of a trial, joining its cells and wrong answers to it
RUN_ID_COLUMN = "run_id"
SEED_COLUMN, POINT_COLUMN = SEED_TAG, POINT_TAG
#: a trial's RUN_COLOR_TAG (empty for sweeps from before the tag)
COLOUR_COLUMN = "colour"
#: a cell of the test grid: its context (e.g. "regular", "main") and digit counts
CONTEXT_COLUMN, ROW_DIGITS_COLUMN, COL_DIGITS_COLUMN = "context", "row_digits", "col_digits"
#: a cell's problems, those answered right, their ratio, and the share of its problems seen in training
N_COLUMN, CORRECT_COLUMN, ACCURACY_COLUMN, SEEN_IN_TRAIN_COLUMN = "n", "correct", "accuracy", "seen_in_train"
N_SEEN_COLUMN, ACCURACY_SEEN_COLUMN, ACCURACY_UNSEEN_COLUMN = "n_seen", "accuracy_seen", "accuracy_unseen"
#: the evaluation a row of eval/cells.csv and eval/errors.csv is from, and a trial's last evaluated epoch
EPOCH_COLUMN, FINAL_EPOCH_COLUMN = "epoch", "final_epoch"
#: a kept wrong answer's operands (b is empty for one-operand tasks), prompt, expected answer and reply
A_COLUMN, B_COLUMN = "a", "b"
PROMPT_COLUMN, EXPECTED_COLUMN, REPLY_COLUMN = "prompt", "expected", "reply"
#: the largest operand pandas' nullable Int64 holds: a length test's longer numbers stay Python ints
INT64_MAX = 2**63 - 1

# --- Params and artifacts of a trial ---

#: the params that are a trial's seeds: a point is every other param fixed
SEED_KEYS: tuple[str, ...] = ("data.seed", "train.seed")
#: a trial's trained model (`runs:/<run id>/model`) and the config saved beside it (what `arith.ask`
#: renders problems with)
MODEL_ARTIFACT, EXPERIMENT_CONFIG = "model", "experiment_config.json"


def point_label(point: str) -> str:
    """A grid point's axes' values: `format=padding_reverse` -> `padding_reverse`, `position=none,
    init=random` -> `none_random` (fit for a metric key and a model's name, which take no `=` or `,`)."""
    return "_".join(part.partition("=")[2] or part for part in point.split(",") if part)


#: what MLflow refuses in a logged model's name, and what stands for it (`lr=0.003` -> `0p003`)
MODEL_NAME_REFUSES = {".": "p", "/": "-", ":": "-", "%": "-", '"': "", "'": ""}


def model_name(point: str, seed: int | str) -> str:
    """A trial's logged model's name in the MLflow UI's Models page: `padding_reverse-seed0`."""
    name = f"{point_label(point)}-seed{seed}"
    return name.translate(str.maketrans(MODEL_NAME_REFUSES))


#: an offline trial's kept model folder, relative to its archive's folder (an archive carries no weights)
WEIGHTS_FOLDER_TAG = "weights_folder"
#: what names a cell of the test grid (a list: pandas reads a tuple as one label)
CELL_KEYS: list[str] = [CONTEXT_COLUMN, ROW_DIGITS_COLUMN, COL_DIGITS_COLUMN]
#: each cell's accuracy split by whether its problems are training problems too (empty where unknown)
SPLIT_COLUMNS: tuple[str, ...] = (N_SEEN_COLUMN, ACCURACY_SEEN_COLUMN, ACCURACY_UNSEEN_COLUMN)
#: one evaluation's cells as the evaluator scores them; eval/cells.csv writes them after `epoch`
CELL_COLUMNS: tuple[str, ...] = (
    *CELL_KEYS,
    *(N_COLUMN, CORRECT_COLUMN, ACCURACY_COLUMN, SEEN_IN_TRAIN_COLUMN),
    *SPLIT_COLUMNS,
)
CELLS_CSV_COLUMNS: tuple[str, ...] = (EPOCH_COLUMN, *CELL_COLUMNS)
#: the last evaluation's kept wrong answers; eval/errors.csv writes them after `epoch`
ERROR_COLUMNS: tuple[str, ...] = (
    *CELL_KEYS,
    *(A_COLUMN, B_COLUMN, PROMPT_COLUMN, EXPECTED_COLUMN, REPLY_COLUMN),
)
LOSS_METRIC = "train/loss"
#: the accuracy over every test problem, and over the digit counts trained on and those beyond
TEST_ACC_METRIC = "test_acc"
IN_RANGE_METRIC, BEYOND_METRIC = f"{TEST_ACC_METRIC}/in_range", f"{TEST_ACC_METRIC}/beyond"
#: each evaluation's cells, the last one's kept wrong answers and the log of failed decodings
CELLS_ARTIFACT, ERRORS_ARTIFACT = "eval/cells.csv", "eval/errors.csv"
FAILURES_ARTIFACT = "eval/failures.jsonl"
#: a sweep's parent run as its summary: its params beside the grid and scale, the headline accuracies
#: logged for each point's seed mean (`<point label>/<accuracy>`, its 95% interval as `.../ci95_low` and
#: `.../ci95_high`), and the prefix of a claim's tag (`claim.<claim id>`: its verdict)
SEEDS_PARAM, COMMAND_PARAM = "seeds", "command"
HEADLINE_METRICS: tuple[str, ...] = (TEST_ACC_METRIC, IN_RANGE_METRIC, f"{TEST_ACC_METRIC}/unseen")
CI_LOW_SUFFIX, CI_HIGH_SUFFIX = "ci95_low", "ci95_high"
CLAIM_TAG_PREFIX = "claim."
#: "learned": the accuracy a cell must reach on every seed (the verdicts' competence gate, length reach)
HELD_ACCURACY = 0.9
#: a length test's reach (`arith.training.metrics.length_reach`): the longest length held, and that plus
#: the mean accuracy beyond it (what a length search's scheduler ranks by)
LONGEST_HELD_METRIC = "length/longest_held"
LENGTH_SCORE_METRIC = "length/score"


def operand_dtype(values) -> str:
    """A column of operands' dtype: "Int64" where every one fits 64 bits, else "object" (exact ints)."""
    return "Int64" if all(v is None or v != v or abs(int(v)) <= INT64_MAX for v in values) else "object"
