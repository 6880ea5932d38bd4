"""The certification-log contract: validated reading, resumable writing, atomic publication."""

import os

import pytest

from ddrs.errors import LogFormatError
from ddrs.logs.certification_log import COHEN_COLUMNS, LogWriter, kept_partials, partial_path, read_log

COLUMNS = (*COHEN_COLUMNS, "scale")


def row(idx, predict=1, radius=0.5):
    return {
        "idx": idx,
        "label": 1,
        "predict": predict,
        "radius": radius,
        "correct": int(predict == 1),
        "time": 0.25,
        "scale": 0.5,
    }


def test_round_trip(tmp_path):
    writer = LogWriter(tmp_path / "log.tsv", COLUMNS)
    for idx in (0, 3, 6):
        writer.write(row(idx))
    assert not (tmp_path / "log.tsv").exists()
    writer.finish()
    frame = read_log(tmp_path / "log.tsv")
    assert list(frame.columns) == list(COLUMNS)
    assert frame["idx"].tolist() == [0, 3, 6]
    assert frame["radius"].tolist() == [0.5, 0.5, 0.5]
    assert not partial_path(tmp_path / "log.tsv").exists()


def test_resume_keeps_complete_rows_and_drops_a_torn_line(tmp_path):
    writer = LogWriter(tmp_path / "log.tsv", COLUMNS)
    writer.write(row(0))
    writer.write(row(1))
    with writer.partial.open("a") as handle:
        handle.write("2\t1\t1")  # killed mid-row
    resumed = LogWriter(tmp_path / "log.tsv", COLUMNS)
    assert resumed.done == {0, 1}
    resumed.write(row(2))
    frame = read_log(resumed.finish())
    assert frame["idx"].tolist() == [0, 1, 2]


def test_resume_refuses_a_partial_log_of_another_run(tmp_path):
    LogWriter(tmp_path / "log.tsv", COLUMNS).write(row(0))
    with pytest.raises(LogFormatError, match="log.tsv.partial: header"):
        LogWriter(tmp_path / "log.tsv", (*COHEN_COLUMNS, "other"))


def test_reads_published_cohen_logs(tmp_path):
    path = tmp_path / "cohen.tsv"
    path.write_text(
        "idx\tlabel\tpredict\tradius\tcorrect\ttime\n0\t3\t3\t0.435\t1\t0:00:01.523456\n20\t8\t-1\t0.0\t0\t1:02:03.5\n"
    )
    frame = read_log(path)
    assert frame["time"].tolist() == pytest.approx([1.523456, 3723.5])
    assert frame["predict"].tolist() == [3, -1]


@pytest.mark.parametrize(
    "text,message",
    [
        ("idx\tlabel\tpredict\tradius\tcorrect\n0\t1\t1\t0.5\t1\n", "missing column"),
        ("idx\tlabel\tpredict\tradius\tcorrect\ttime\n0\t1\tcat\t0.5\t1\t1\n", "line 2: predict 'cat' is not a"),
        ("idx\tlabel\tpredict\tradius\tcorrect\ttime\n0\t1\t1\t0.5\t1\t1\n0\t1\t1\t0.5\t1\t1\n", "duplicate idx 0"),
        ("", "not a tab-separated"),
    ],
)
def test_bad_logs_name_the_file_and_the_problem(tmp_path, text, message):
    path = tmp_path / "bad.tsv"
    path.write_text(text)
    with pytest.raises(LogFormatError, match=f"bad.tsv.*{message}"):
        read_log(path)


HEADER = "idx\tlabel\tpredict\tradius\tcorrect\ttime\tscale\tnoise\n"
ROW = "0\t1\t1\t0.5\t1\t0.25\t0.5\tgaussian\n"


@pytest.mark.parametrize(
    "text,message",
    [
        (
            HEADER + ROW + "1\t1\t1\t0.5\t1\t0.25\t0.5\tgau",
            "line 3 does not end with a newline .*add it if this row is whole",
        ),
        (HEADER + ROW + "1\t1\t1\t0.5\t1\t0.25\n" + ROW.replace("0", "2", 1), "line 3 has 6 of the header's 8 fields"),
        (HEADER + "0\t1\t1\t\t1\t\t0.5\tgaussian\n", "line 2 has no value for radius, time"),
    ],
    ids=["no_newline", "fields_missing", "empty_fields"],
)
def test_a_log_cut_mid_row_names_the_file_the_line_and_what_to_do(tmp_path, text, message):
    path = tmp_path / "cut.tsv"
    path.write_text(text)
    with pytest.raises(LogFormatError, match=f"cut.tsv: {message}.*: an incomplete log.*rerun the job that wrote it"):
        read_log(path)


def test_columns_after_cohens_may_be_empty_and_a_header_alone_is_an_empty_log(tmp_path):
    path = tmp_path / "log.tsv"
    path.write_text(HEADER + ROW.replace("gaussian", "") + "\n")  # a blank line at the end is skipped
    assert read_log(path)["noise"].isna().tolist() == [True]
    path.write_text(HEADER.rstrip("\n"))
    assert read_log(path).empty


COHEN_HEADER = "idx\tlabel\tpredict\tradius\tcorrect\ttime\n"
COHEN_ROWS = "".join(f"{i}\t{i % 10}\t{i % 10}\t0.5\t1\t0:00:01.25\n" for i in range(6))


def _with_row(row: int, column: str, value: str) -> str:
    """The Cohen-format log of six rows, data row ``row`` (0-based) with ``column`` written as ``value``."""
    lines = COHEN_ROWS.splitlines()
    fields = lines[row].split("\t")
    fields[COHEN_HEADER.rstrip("\n").split("\t").index(column)] = value
    lines[row] = "\t".join(fields)
    return COHEN_HEADER + "\n".join(lines) + "\n"


@pytest.mark.parametrize(
    "text,message",
    [
        (_with_row(4, "idx", "0x64"), r"line 6: idx '0x64' is not a number"),
        (_with_row(4, "label", "\u0663"), r"line 6: label '\u0663' is not a number"),  # an Arabic-Indic 3
        (_with_row(2, "radius", "1_00"), r"line 4: radius '1_00' is not a number"),
        (_with_row(1, "label", "1e20"), r"line 3: label '1e20' is beyond a 64-bit integer"),
        (_with_row(1, "idx", "99999999999999999999"), r"line 3: idx '99999999999999999999' is beyond a 64-bit"),
        (_with_row(3, "correct", "0.5"), r"line 5: correct '0\.5' is not an integer"),
        (_with_row(0, "time", "soon"), r"line 2: time 'soon' is neither seconds nor H:MM:SS"),
        ("\n".join([COHEN_HEADER + COHEN_ROWS[:40], "# certified on 2024-01-01", *COHEN_ROWS.splitlines()[2:]]) + "\n",
         r"line 4 is a comment \('# certified on 2024-01-01'\): a certification log has none"),
        (COHEN_HEADER + COHEN_ROWS + COHEN_HEADER + COHEN_ROWS.replace("\t", "\t", 1).replace("0\t0", "9\t9", 1),
         r"line 8 repeats the header \(two logs joined\?\)"),
        ("idx\tlabel\tpredict\tradius\tcorrect\tradius\n0\t1\t1\t0.5\t1\t9\n",
         r"line 1: column radius is named twice in the header"),
    ],
    ids=["hexadecimal", "other_script_digit", "underscore", "label_beyond_int64", "idx_beyond_int64",
         "fractional_correct", "bad_time", "comment_line", "repeated_header", "duplicate_column"],
)  # fmt: skip
def test_a_bad_row_names_the_file_its_line_the_column_and_the_value(tmp_path, text, message):
    """Lines count from 1, the header's included, as an editor numbers them."""
    path = tmp_path / "mine.tsv"
    path.write_text(text)
    with pytest.raises(LogFormatError, match=f"mine.tsv: {message}") as refused:
        read_log(path)
    assert len(str(refused.value).splitlines()) == 1


def test_only_a_regular_file_is_read_and_a_fifo_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "mine.tsv"
    os.mkfifo(fifo)  # opening it to read would wait for a writer forever
    with pytest.raises(LogFormatError, match=r"mine.tsv is a FIFO \(named pipe\), not a certification log"):
        read_log(fifo)
    with pytest.raises(LogFormatError, match=r"/dev/null is a character device, not a certification log"):
        read_log("/dev/null")
    (tmp_path / "log.tsv").write_text(COHEN_HEADER + COHEN_ROWS)
    (tmp_path / "link.tsv").symlink_to(tmp_path / "log.tsv")
    assert len(read_log(tmp_path / "link.tsv")) == 6  # a link to a regular file is that file


def test_a_directory_is_not_a_log(tmp_path):
    with pytest.raises(LogFormatError, match=f"{tmp_path} is a directory, not a certification log"):
        read_log(tmp_path)


def test_the_first_column_is_idx(tmp_path):
    with pytest.raises(ValueError, match="first log column must be idx"):
        LogWriter(tmp_path / "log.tsv", ("radius", "idx"))


def test_floats_are_written_exactly(tmp_path):
    writer = LogWriter(tmp_path / "log.tsv", COLUMNS)
    radius = 0.1 + 0.2  # 0.30000000000000004: rounding it to 0.3 would be harmless, upwards would not
    writer.write(row(0, radius=radius))
    assert read_log(writer.finish())["radius"].tolist() == [radius]


def test_a_partial_log_resumes_only_under_the_same_settings(tmp_path):
    settings = {"n": 1000, "seed": 0, "checkpoint": "abc"}
    LogWriter(tmp_path / "log.tsv", COLUMNS, settings).write(row(0))
    assert LogWriter(tmp_path / "log.tsv", COLUMNS, dict(settings)).done == {0}
    with pytest.warns(
        UserWarning, match=r"log.tsv.partial was written with other settings \(n: 1000 -> 10000\); starting over"
    ):
        fresh = LogWriter(tmp_path / "log.tsv", COLUMNS, {**settings, "n": 10_000})
    assert fresh.done == set()
    fresh.write(row(1))
    assert read_log(fresh.finish())["idx"].tolist() == [1]
    assert list(tmp_path.iterdir()) == [tmp_path / "log.tsv"]


def test_a_resumed_log_keeps_only_the_inputs_this_run_certifies(tmp_path):
    """An interrupted run with another --skip / --max leaves rows this run must not publish."""
    killed = LogWriter(tmp_path / "log.tsv", COLUMNS, {"seed": 0}, indices=range(20))
    for idx in range(5):
        killed.write(row(idx))
    with pytest.warns(UserWarning, match=r"log.tsv.partial: dropping 4 rows of inputs this run does not certify"):
        resumed = LogWriter(tmp_path / "log.tsv", COLUMNS, {"seed": 0}, indices=[0, 5, 10, 15])
    assert resumed.done == {0}
    for idx in (5, 10, 15):
        resumed.write(row(idx))
    assert read_log(resumed.finish())["idx"].tolist() == [0, 5, 10, 15]


def test_a_log_missing_one_of_its_inputs_is_not_published(tmp_path):
    writer = LogWriter(tmp_path / "log.tsv", COLUMNS, indices=[0, 1])
    writer.write(row(0))
    with pytest.raises(ValueError, match=r"log.tsv.partial: no row yet for 1 of its inputs \(first idx 1\)"):
        writer.finish()
    assert not (tmp_path / "log.tsv").exists()


@pytest.mark.parametrize("killed_file", [".partial", ".partial.json"])
def test_a_kill_while_starting_over_never_pairs_old_rows_with_new_settings(tmp_path, monkeypatch, killed_file):
    LogWriter(tmp_path / "log.tsv", COLUMNS, {"n": 100}).write(row(0))
    write_text = type(tmp_path).write_text

    def killed_on_one_file(path, *args, **kwargs):
        if path.name.endswith(killed_file):
            raise KeyboardInterrupt
        return write_text(path, *args, **kwargs)

    with monkeypatch.context() as patch, pytest.warns(UserWarning, match="other settings"):
        patch.setattr(type(tmp_path), "write_text", killed_on_one_file)
        with pytest.raises(KeyboardInterrupt):
            LogWriter(tmp_path / "log.tsv", COLUMNS, {"n": 200})
    with pytest.warns(UserWarning, match="other settings"):
        assert LogWriter(tmp_path / "log.tsv", COLUMNS, {"n": 200}).done == set()


def test_the_settings_warning_names_what_changed_in_a_line_of_readable_length(tmp_path):
    scales = [[i, 0.5] for i in range(1000)]
    LogWriter(tmp_path / "log.tsv", COLUMNS, {"n": 100, "scales": scales}).write(row(0))
    with pytest.warns(UserWarning) as record:
        LogWriter(tmp_path / "log.tsv", COLUMNS, {"n": 100, "scales": [[0, 0.25], *scales[1:]]})
    message = str(record[0].message)
    assert "(scales: [[0, 0.5], [1, 0.5], [2, 0.5], [3, 0.... -> [[0, 0.25], [1, 0.5], [2, 0.5], [3, 0...);" in message
    assert len(message) < 300


def finished_log(path):
    """A one-row log, written as the resumable loops do: only rows not already done."""
    writer = LogWriter(path, COLUMNS, {"seed": 0})
    if 0 not in writer.done:
        writer.write(row(0))
    return writer.finish()


def test_kept_partials_outlive_a_failure_and_go_when_the_outermost_block_succeeds(tmp_path):
    first, second = tmp_path / "first.tsv", tmp_path / "second.tsv"
    with pytest.raises(RuntimeError, match="the job's second step failed"), kept_partials():
        finished_log(first)
        raise RuntimeError("the job's second step failed")
    assert first.exists() and partial_path(first).exists()  # a rerun publishes it from these rows
    first.unlink()  # as Snakemake does before the rerun
    with kept_partials():
        with kept_partials():  # a command inside `ddrs batch` leaves the clean-up to the batch
            assert finished_log(first) == first and read_log(first)["idx"].tolist() == [0]
        finished_log(second)
        assert partial_path(first).exists() and partial_path(second).exists()
    assert not list(tmp_path.glob("*.partial*"))
    finished_log(tmp_path / "alone.tsv")  # outside a block a finished log keeps nothing
    assert not list(tmp_path.glob("*.partial*"))
