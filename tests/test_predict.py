"""``computeshare predict`` (and ``evaluate`` on either file): a saved model's top classes for
image files the test writes from mnist-sample's test split, and for CSV rows of a table
model the test exports itself; bad inputs are reported one by one and the others predicted."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image
from torch import nn

from computeshare_desktop.cli.main import main
from computeshare_desktop.data import load_dataset, normalize
from computeshare_desktop.errors import ConfigError, ExitCode
from computeshare_desktop.hub.exports import export_program
from computeshare_desktop.hub.outputs import (CLASSES_FILE, MODEL_FILE, PROGRAM_FILE, SESSION_FILE,
                                             OutputDir)
from computeshare_desktop.models import build_model
from computeshare_desktop.predict import (Prediction, Unread, cover, load_predictor,
                                          read_classes, read_image, read_rows)

IMAGES = 20  # test images written as PNG files


@pytest.fixture(scope="module")
def saved(tmp_path_factory) -> Path:
    """A simplenet trained a little on mnist-sample (about 90%), saved as a hub saves it
    (.pth, .pt2, classes.json, session.json); the test images beside it as PNG files."""
    folder = tmp_path_factory.mktemp("saved")
    train = load_dataset("mnist-sample", "train")
    model = build_model("simplenet", train.info, seed=0)
    sgd = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    generator = torch.Generator().manual_seed(0)
    for _ in range(60):
        batch = torch.randint(0, len(train), (64,), generator=generator)
        loss = nn.functional.cross_entropy(model(normalize(train.images[batch], train.info)),
                                           train.labels[batch])
        sgd.zero_grad()
        loss.backward()
        sgd.step()
    out = OutputDir(folder)
    out.save_model(model.state_dict())
    out.save_program(export_program(model, train.info))
    out.save_classes(train.info.class_names)
    out.write_session({"config": {"dataset": "mnist-sample", "model": "simplenet"}})
    test = load_dataset("mnist-sample", "test")
    for i in range(IMAGES):
        Image.fromarray(test.images[i, 0].numpy()).save(folder / f"digit{i}_{test.labels[i]}.png")
    return folder


def digits(folder: Path) -> list[Path]:
    return sorted(folder.glob("digit*.png"), key=lambda p: int(p.stem[5:].split("_")[0]))


def label(path: str) -> str:
    return Path(path).stem.split("_")[1]


def test_png_digits_are_mostly_right_with_either_file(saved):
    files = digits(saved)
    by_program = load_predictor(saved / PROGRAM_FILE, "simplenet", load_dataset(
        "mnist-sample", "test").info).predict(files, 3)
    by_weights = load_predictor(saved / MODEL_FILE, "simplenet", load_dataset(
        "mnist-sample", "test").info).predict(files, 3)
    assert all(isinstance(r, Prediction) and len(r.top) == 3 for r in by_program)
    right = [r.top[0].label == label(r.file) for r in by_program if isinstance(r, Prediction)]
    assert sum(right) >= 0.8 * IMAGES
    for a, b in zip(by_program, by_weights, strict=True):
        assert isinstance(a, Prediction) and isinstance(b, Prediction)
        assert [g.index for g in a.top] == [g.index for g in b.top]
        assert [g.probability for g in a.top] == pytest.approx([g.probability for g in b.top],
                                                               abs=1e-5)
        assert a.top[0].probability >= a.top[1].probability >= a.top[2].probability


def test_a_png_at_the_models_size_is_read_exactly(saved):
    test = load_dataset("mnist-sample", "test")
    x = read_image(digits(saved)[0], (1, 28, 28))
    assert x.dtype == torch.float32 and torch.equal(x, test.images[0].float() / 255)


def test_images_of_other_sizes_and_kinds_are_fitted(saved, tmp_path):
    """RGB, RGBA, palette and 16-bit-free formats (JPEG, BMP, WebP), upscaled, or wide:
    converted to one channel, scaled to cover 28×28 with the aspect kept, cropped."""
    test = load_dataset("mnist-sample", "test")
    made = []
    for i, (kind, mode) in enumerate([("bmp", "RGB"), ("webp", "RGB"), ("png", "RGBA"),
                                      ("png", "P"), ("jpg", "RGB")]):
        image = Image.fromarray(test.images[i, 0].numpy()).resize((84, 84)).convert(mode)
        path = tmp_path / f"big{i}_{test.labels[i]}.{kind}"
        image.save(path, **({"lossless": True} if kind == "webp" else {}))
        made.append(path)
    wide = Image.new("L", (56, 28))
    wide.paste(Image.fromarray(test.images[5, 0].numpy()), (14, 0))  # centred on black
    wide.save(tmp_path / f"wide_{test.labels[5]}.png")
    made.append(tmp_path / f"wide_{test.labels[5]}.png")
    results = load_predictor(saved / PROGRAM_FILE, "", test.info).predict(made, 1)
    assert all(isinstance(r, Prediction) for r in results), results
    assert sum(r.top[0].label == label(r.file) for r in results) >= 4  # type: ignore[union-attr]
    centred = read_image(made[-1], (1, 28, 28))
    assert torch.equal(centred, test.images[5].float() / 255)  # the middle, unscaled


def test_cover_keeps_the_aspect_and_crops_the_middle():
    image = Image.fromarray(np.repeat(np.array([[0, 100, 200]], dtype=np.uint8), 10, axis=1)
                            .repeat(10, axis=0))  # 30 wide, 10 high: three bands
    fitted = cover(image, 10, 10)
    assert fitted.size == (10, 10) and set(np.asarray(fitted).ravel()) == {100}
    tall = cover(image, 6, 12)  # scaled to 36×12, the middle 6 columns
    assert tall.size == (6, 12) and set(np.asarray(tall).ravel()) == {100}


def test_bad_files_are_reported_and_the_others_predicted(saved, tmp_path):
    (tmp_path / "notes.png").write_text("not an image", encoding="utf-8")
    (tmp_path / "cut.png").write_bytes((saved / digits(saved)[0].name).read_bytes()[:60])
    (tmp_path / "folder.png").mkdir()
    good = digits(saved)[:2]
    files = [good[0], tmp_path / "missing.png", tmp_path / "notes.png", tmp_path / "cut.png",
             tmp_path / "folder.png", good[1]]
    results = load_predictor(saved / PROGRAM_FILE, "", load_dataset(
        "mnist-sample", "test").info).predict(files, 2)
    assert [type(r).__name__ for r in results] == ["Prediction", "Unread", "Unread", "Unread",
                                                   "Unread", "Prediction"]
    errors = [r.error for r in results if isinstance(r, Unread)]
    assert errors[:2] == ["no such file", "not an image (PNG, JPEG, BMP or WebP)"]
    assert "cannot read the image" in errors[2] and errors[3] == "not a file"


# ----------------------------------------------------------------- tables
@pytest.fixture(scope="module")
def table_model(tmp_path_factory) -> tuple[Path, nn.Module]:
    """A Linear model over 4 columns and 3 classes, exported in eval mode as a .pt2, with
    its classes.json."""
    folder = tmp_path_factory.mktemp("table")
    torch.manual_seed(0)
    model = nn.Linear(4, 3).eval()
    program = torch.export.export(model, (torch.randn(2, 4),),
                                  dynamic_shapes=({0: torch.export.Dim("batch", min=1)},))
    torch.export.save(program, folder / "model.pt2")
    (folder / CLASSES_FILE).write_text(json.dumps(["setosa", "versicolor", "virginica"]),
                                       encoding="utf-8")
    return folder / "model.pt2", model


def test_a_table_model_predicts_each_csv_row(table_model, tmp_path):
    path, model = table_model
    rows = [[5.1, 3.5, 1.4, 0.2], [6.0, -2.2, 4.0, 1.0], [0.0, 0.0, 0.0, 9.0]]
    csv = tmp_path / "rows.csv"
    csv.write_text("a,b,c,d\n" + "\n".join(",".join(map(str, r)) for r in rows) + "\n\n",
                   encoding="utf-8")
    predictor = load_predictor(path, "", load_dataset("mnist-sample", "test").info)
    assert not predictor.takes_images and predictor.model.sample_shape == (4,)
    results = predictor.predict([csv], 2)
    expected = model(torch.tensor(rows)).argmax(dim=1).tolist()
    assert [r.row for r in results] == [1, 2, 3]  # type: ignore[union-attr]
    assert [r.top[0].index for r in results] == expected  # type: ignore[union-attr]
    names = ["setosa", "versicolor", "virginica"]
    assert [r.top[0].label for r in results] == [names[i] for i in expected]  # type: ignore[union-attr]
    assert results[0].to_json()["row"] == 1 and "rows.csv row 1: " in results[0].text()


@pytest.mark.parametrize("text, error", [
    ("1,2,3,4\n1,2,3,4,5\n", "row 2 (line 2) has 5 values; the model takes 4"),
    ("a,b,c,d\n1,2,x,4\n", "row 1 (line 2) holds a value that is not a number"),
    ("a,b,c,d\n\n", "no rows of numbers"),
])
def test_a_bad_csv_gets_a_clear_error(table_model, tmp_path, text, error):
    (tmp_path / "bad.csv").write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError, match=error.replace("(", r"\(").replace(")", r"\)")):
        read_rows(tmp_path / "bad.csv", 4)


def test_a_binary_file_is_not_a_csv(table_model, tmp_path):
    (tmp_path / "image.csv").write_bytes(b"\x89PNG\r\n\x1a\n\xff\xfe\x00")
    (result,) = load_predictor(table_model[0], "", load_dataset(
        "mnist-sample", "test").info).predict([tmp_path / "image.csv"], 1)
    assert isinstance(result, Unread) and "not a CSV file of numbers" in result.error


def test_without_classes_json_the_classes_are_numbered(table_model, tmp_path):
    lone = tmp_path / "lone.pt2"
    lone.write_bytes(table_model[0].read_bytes())
    (tmp_path / "r.csv").write_text("1,2,3,4\n", encoding="utf-8")
    (result,) = load_predictor(lone, "", load_dataset("mnist-sample", "test").info).predict(
        [tmp_path / "r.csv"], 3)
    assert sorted(g.label for g in result.top) == ["0", "1", "2"]  # type: ignore[union-attr]
    (tmp_path / CLASSES_FILE).write_text('["only", "two"]', encoding="utf-8")
    (result,) = load_predictor(lone, "", load_dataset("mnist-sample", "test").info).predict(
        [tmp_path / "r.csv"], 3)
    assert isinstance(result, Unread) and "names 2 classes; the model gives 3" in result.error


# ----------------------------------------------------------------- the command line
@pytest.fixture(autouse=True)
def root_logging():
    """The command line sets the root logger's handlers and level: put them back."""
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    yield
    root.handlers[:] = handlers
    root.setLevel(level)


def test_the_command_prints_json_lines_and_exits_2_on_a_bad_file(saved, tmp_path, capsys):
    files = [str(p) for p in digits(saved)[:3]]
    assert main(["predict", str(saved / PROGRAM_FILE), *files, "--json", "--top", "1"]) == 0
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert [x["file"] for x in lines] == files and all(len(x["top"]) == 1 for x in lines)
    assert set(lines[0]["top"][0]) == {"class", "index", "probability"}
    (tmp_path / "x.png").write_text("text", encoding="utf-8")
    code = main(["predict", str(saved / MODEL_FILE), files[0], str(tmp_path / "x.png")])
    out, err = capsys.readouterr()
    assert code == ExitCode.USAGE
    assert out.startswith(f"{files[0]}: ") and out.count("%") == 3
    assert f"error: {tmp_path / 'x.png'}: not an image" in err


def test_the_command_refuses_a_model_that_is_not_one(tmp_path, capsys):
    (tmp_path / "model.pt2").write_text("no", encoding="utf-8")
    (tmp_path / "a.png").write_text("no", encoding="utf-8")
    assert main(["predict", str(tmp_path / "model.pt2"), str(tmp_path / "a.png")]) == 2
    assert "is not a torch.export program (.pt2)" in capsys.readouterr().err
    assert main(["predict", str(tmp_path / "model.pt2"), "a.png", "--top", "0"]) == 2
    assert "--top must be 1 or more" in capsys.readouterr().err


def test_evaluate_takes_either_file(saved, capsys):
    scores = []
    for name in (MODEL_FILE, PROGRAM_FILE):
        assert main(["evaluate", str(saved / name), "--json"]) == 0
        scores.append(json.loads(capsys.readouterr().out))
    assert scores[0]["accuracy"] == pytest.approx(scores[1]["accuracy"], abs=0.01)
    assert scores[0]["accuracy"] > 0.8 and scores[1]["samples"] == 1000


def test_evaluate_beside_a_damaged_session_json_uses_the_defaults_and_says_so(
        saved, tmp_path, capsys, caplog):
    """A session.json that does not read (a wrong type in it) is not the session's: evaluate
    scores with the session defaults (mnist-sample, simplenet here), warns naming what was
    wrong, and keeps a copy of the file."""
    import shutil

    folder = tmp_path / "copy"
    shutil.copytree(saved, folder)
    (folder / SESSION_FILE).write_text(json.dumps({"config": ["not", "a", "dict"]}),
                                       encoding="utf-8")
    assert main(["evaluate", str(folder / MODEL_FILE), "--json"]) == 0
    said = capsys.readouterr()
    assert json.loads(said.out)["accuracy"] > 0.8
    told = said.err + caplog.text  # the command line's own handler, or the root's
    assert "Expected `object`, got `array`" in told and "$.config" in told
    assert list(folder.glob(f"{SESSION_FILE}.damaged-*"))


@pytest.mark.parametrize("text, said", [
    ('{"0": "cat"}', "Expected `array`, got `object`"),
    ('["cat", 2]', "Expected `str`, got `int` - at `$[1]`"),
    ('["cat" "dog"]', "JSON is malformed"),
    ('["cat", "dog"', "truncated"),
])
def test_a_damaged_classes_json_is_a_clear_error(tmp_path, text, said):
    path = tmp_path / CLASSES_FILE
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as raised:
        read_classes(path)
    assert str(raised.value).startswith(f"{path} is not a JSON list of class names (")
    assert said in str(raised.value)
    assert not list(tmp_path.glob("*.damaged-*"))  # predict refuses: nothing to keep
    path.write_text('["cat", "dög"]', encoding="utf-8")  # as the hub writes it
    assert read_classes(path) == ("cat", "dög") and read_classes(tmp_path / "none") is None
