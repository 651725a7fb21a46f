"""A Python caller's mistakes with results, recordings and trace sessions are VisprofErrors that say
what went wrong (``except visprof.VisprofError`` catches them), not a RuntimeError or ValueError from
inside, nor an OS error that blames the file system."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

import visprof
from visprof.base.errors import BadInputError, NotAResultError
from visprof.result import ProfileResult

RESULT = Path(__file__).resolve().parents[1] / "data" / "h200-result-vit_base_patch16_224.json"


def test_a_folder_given_as_a_file_to_write_is_said_to_be_one(tmp_path):
    # "could not write adir: Is a directory; the previous file is unchanged" (an OutputWriteError)
    result, folder = ProfileResult.load(RESULT), tmp_path / "adir"
    folder.mkdir()
    with pytest.raises(BadInputError, match=r"^output .*adir is a directory; give a file name$"):
        result.to_json(folder)
    with visprof.trace(gpu=False) as session:
        torch.ones(2) + 1
    with pytest.raises(BadInputError, match="adir is a directory; give a file name"):
        session.save(folder)
    assert list(folder.iterdir()) == []


def test_a_session_used_before_its_block_ends_is_a_visprof_error():
    with visprof.trace(gpu=False) as session:
        with pytest.raises(visprof.VisprofError, match="after the `with visprof.trace\\(\\)` block ends"):
            session.table()
        with pytest.raises(visprof.VisprofError, match="recording already"):
            with session:
                pass
    assert "elementwise" in session.table() or session.table().startswith("(no op")


def test_a_recording_loaded_from_another_document_says_what_it_is(tmp_path):
    # CapturedTrace.load raised ValueError("not a visprof.trace/1 recording (schema=None)")
    with pytest.raises(BadInputError, match=r"recording .*h200-result-vit_base_patch16_224.json: not a visprof.trace/1 "
                                            r"recording \(schema='visprof.profile/1'\): it is a profile result"):
        visprof.CapturedTrace.load(RESULT)
    chrome = tmp_path / "t.json"
    chrome.write_text('{"traceEvents": []}')
    with pytest.raises(BadInputError, match="a Chrome trace .* is not read back"):
        visprof.CapturedTrace.load(chrome)


@pytest.mark.parametrize("document, what", [
    ({"traceEvents": []}, "it is a Chrome trace"),
    ({"per": "iteration", "differences": []}, "it is visprof diff's --json summary of two results"),
    ({"schema": "visprof.trace/1"}, "it is a trace recording"),
    ({"schema": "visprof.calibration/1"}, "it is a calibration"),
])
def test_a_result_loaded_from_another_visprof_document_says_which(tmp_path, document, what):
    # all had said "not a visprof profile result (schema=None)"; from_dict repeated itself too
    path = tmp_path / "x.json"
    path.write_text(json.dumps(document))
    with pytest.raises(NotAResultError, match=f"^result file {path}: not a visprof profile result .*: {what}"):
        ProfileResult.load(path)
    with pytest.raises(NotAResultError, match=f"^not a visprof profile result .*: {what}"):
        ProfileResult.from_dict(document)


def test_a_result_holding_nan_is_refused_naming_the_field(tmp_path):
    # json's "Out of range float values are not JSON compliant: nan", ten frames deep, named no field
    result = ProfileResult.load(RESULT)
    result.categories[2].share = float("nan")
    with pytest.raises(BadInputError, match=r"^the result holds nan at categories\[2\]\.share, which a JSON document "
                                            r"cannot hold"):
        result.to_json(tmp_path / "r.json")
    assert not (tmp_path / "r.json").exists()


def test_a_profile_from_a_second_thread_while_one_runs_is_refused_in_one_line():
    """Two threads' profile() at once: the second had failed inside the ATen observer with a bare
    RuntimeError ("the visprof ATen observer is already running"), no VisprofError."""
    import threading

    inside, tried = threading.Event(), threading.Event()

    class Waits(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = torch.nn.Conv2d(3, 4, 3)

        def forward(self, x):
            inside.set()
            tried.wait(30)  # the other thread's profile() is asked for while this forward runs
            return self.conv(x)

    results = []
    first = threading.Thread(target=lambda: results.append(
        visprof.profile(Waits(), img_size=16, batch_size=1, progress=False, passes="attributed")))
    first.start()
    try:
        assert inside.wait(60)
        with pytest.raises(BadInputError, match=r"^visprof\.profile\(\) while another profile runs in this process"):
            visprof.profile(torch.nn.Conv2d(3, 4, 3), img_size=16, batch_size=1, progress=False)
    finally:
        tried.set()
        first.join(120)
    assert len(results) == 1 and results[0].attribution.coverage > 0.99
    assert visprof.profile(torch.nn.Conv2d(3, 4, 3), img_size=16, batch_size=1, progress=False,
                           passes="attributed").categories  # one after the other is fine
