"""``securefl run``: result files with the agreed fields, and one-line errors for bad input."""

import json

import numpy as np
import pandas as pd
import pytest

from securefl.cli import main

FIELDS = ("method", "dataset", "seed", "device", "metrics", "seconds", "bytes", "settings")


def _party_csvs(folder, *, labels=None, passive_ids=None):
    rng = np.random.default_rng(0)
    n = 600
    x = rng.normal(size=(n, 4))
    y = (x[:, 0] + x[:, 2] > 0).astype(int) if labels is None else labels
    ids = [f"u{i}" for i in range(n)]
    active = pd.DataFrame({"id": ids, "y": y, "a0": x[:, 0], "a1": x[:, 1]})
    passive = pd.DataFrame({"id": passive_ids or ids, "p0": x[:, 2], "p1": x[:, 3]})
    active.to_csv(folder / "bank.csv", index=False)
    passive.to_csv(folder / "shop.csv", index=False)
    return folder / "bank.csv", folder / "shop.csv"


@pytest.mark.parametrize("method", ["stfl", "centralized", "hierarchical"])
def test_run_on_party_csvs_writes_the_agreed_result_fields(tmp_path, capsys, method):
    bank, shop = _party_csvs(tmp_path)
    out = tmp_path / "result.json"

    code = main(["run", method, "--party-csv", str(bank), str(shop), "--label", "y", "--epochs", "30", "--lr", "0.01",
                 "--seed", "3", "--json", str(out), "--no-progress"])

    result = json.loads(out.read_text())
    assert code == 0
    assert all(field in result for field in FIELDS)
    assert result["method"] == method and result["seed"] == 3
    assert result["metrics"]["accuracy"] > 0.6  # chance is 0.5: the label is a linear rule of both parties
    assert f"{method} on " in capsys.readouterr().out


def test_without_no_progress_each_phase_draws_an_epoch_bar_on_stderr(tmp_path, capsys):
    # Arrange
    bank, shop = _party_csvs(tmp_path)

    # Act
    code = main(["run", "stfl", "--party-csv", str(bank), str(shop), "--epochs", "3"])

    # Assert: a tqdm bar of 3 epochs on stderr (cleared when done), the result line alone on stdout
    captured = capsys.readouterr()
    assert code == 0
    assert "stfl:" in captured.err and "/3 [" in captured.err and "epoch/s" in captured.err
    assert captured.out.startswith("stfl on ") and len(captured.out.strip().splitlines()) == 1


def test_stfl_reports_bytes_sent_between_parties(tmp_path):
    bank, shop = _party_csvs(tmp_path)
    out = tmp_path / "stfl.json"

    main(["run", "stfl", "--party-csv", str(bank), str(shop), "--epochs", "2", "--json", str(out),
          "--no-progress"])

    assert json.loads(out.read_text())["bytes"] > 0


@pytest.mark.parametrize("argv, message", [
    (["--dataset", "no_such_set"], "unknown dataset 'no_such_set'"),
    (["--all-data"], "--all-data applies to the vertical methods but stfl, whose passive parties pretrain"),
    (["--epochs", "0"], "--epochs must be at least 1"),
    (["--batch-size", "0"], "--batch-size must be at least 1, got 0"),
    (["--vae-epochs", "0"], "--vae-epochs must be at least 1, got 0"),
    (["--lr", "0"], "--lr must be positive, got 0.0"),
    (["--lr", "nan"], "--lr must be positive, got nan"),
    (["--seed", "-1"], "--seed must be non-negative, got -1"),
    (["--device", "cuda:7"], "--device"),
    (["--cuda-graphs"], "--cuda-graphs applies to stfl, hierarchical and centralized on a CUDA --device"),
    (["--no-cuda-graphs"], "--no-cuda-graphs applies to stfl, hierarchical and centralized on a CUDA --device"),
    (["--passive-seed", "3"], "--passive-seed applies to he-vfl"),
    (["--share-seed", "3"], "--share-seed applies to he-vfl"),
    (["--latent", "mean", "--latent-seed", "3"], "--latent-seed applies to stfl with --latent sample"),
])
def test_bad_arguments_are_one_line_errors(capsys, argv, message):
    code = main(["run", "stfl", "--no-progress", *argv])

    err = capsys.readouterr().err.strip()
    assert code == 2 and message in err and len(err.splitlines()) == 1


def test_latent_reading_is_an_stfl_option(capsys):
    # Act
    code = main(["run", "hierarchical", "--no-progress", "--latent", "mean"])
    # Assert
    err = capsys.readouterr().err.strip()
    assert code == 2 and "--latent applies to stfl" in err and len(err.splitlines()) == 1


@pytest.mark.parametrize("method, flags, graphs", [("stfl", ["--cuda-graphs"], True), ("centralized", [], True),
                                                   ("hierarchical", ["--no-cuda-graphs"], False)])
def test_cuda_graphs_are_the_cuda_default_and_can_be_turned_off(method, flags, graphs):
    # Arrange
    from securefl.cli import build_parser
    from securefl.commands.run import method_config

    args = build_parser().parse_args(["run", method, "--device", "cuda", "--epochs", "3", "--batch-size", "64",
                                      *flags])
    # Act
    config = method_config(method, args, progress=None)
    # Assert
    assert config.cuda_graphs is graphs and config.settings()["cuda_graphs"] is graphs


def test_non_binary_label_is_a_one_line_error_naming_the_file(tmp_path, capsys):
    bank, shop = _party_csvs(tmp_path, labels=np.arange(600) % 3)

    code = main(["run", "stfl", "--party-csv", str(bank), str(shop), "--no-progress"])

    err = capsys.readouterr().err.strip()
    assert code == 2 and "bank.csv" in err and "binary" in err and len(err.splitlines()) == 1


def test_a_json_that_would_replace_an_input_csv_is_refused_before_any_work(tmp_path, capsys):
    # Arrange
    bank, shop = _party_csvs(tmp_path)
    before = shop.read_bytes()
    # Act
    code = main(["run", "centralized", "--party-csv", str(bank), str(shop), "--json", str(shop), "--no-progress"])
    # Assert
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and f"--json {shop} would replace --party-csv {shop}" in err
    assert shop.read_bytes() == before


def test_a_passive_csv_given_twice_is_refused(tmp_path, capsys):
    # Arrange
    bank, shop = _party_csvs(tmp_path)
    # Act
    code = main(["run", "centralized", "--party-csv", str(bank), str(shop), str(shop), "--no-progress"])
    # Assert
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and f"--party-csv {shop} is also given as --party-csv" in err


def test_the_identity_key_given_as_a_party_csv_is_refused_before_it_is_read(tmp_path, capsys):
    # Arrange: a private key file in the place of a data file
    bank, _ = _party_csvs(tmp_path)
    key = tmp_path / "k1"
    assert main(["keygen", str(key)]) == 0
    capsys.readouterr()
    argv = ["run", "stfl", "--role", "active", "--party-csv", str(key), "--identity", str(key),
            "--trust", str(bank), "--peer", "127.0.0.1:1", "--no-progress"]
    # Act
    code = main(argv)
    # Assert: no key text in the message
    err = capsys.readouterr().err.strip()
    assert code == 2 and f"--identity {key} is also given as --party-csv {key}" in err
    assert key.read_text().strip()[:8] not in err


def test_passive_party_without_common_ids_is_a_one_line_error(tmp_path, capsys):
    bank, shop = _party_csvs(tmp_path, passive_ids=[f"other{i}" for i in range(600)])

    code = main(["run", "stfl", "--party-csv", str(bank), str(shop), "--no-progress"])

    err = capsys.readouterr().err.strip()
    assert code == 2 and "shop.csv" in err and len(err.splitlines()) == 1


def _children(pid: int) -> list[int]:
    """Live child processes of ``pid``, whichever of its threads started them."""
    from pathlib import Path

    tasks = Path(f"/proc/{pid}/task")
    return [int(k) for t in tasks.iterdir() for k in (t / "children").read_text().split()]


def _alive(pid: int) -> bool:
    from pathlib import Path

    try:  # a zombie has ended: only its exit status waits to be read
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_ctrl_c_during_packed_ckks_training_ends_in_one_line_with_no_helper_left():
    import os
    import signal
    import subprocess
    import sys
    import time

    # Arrange: HE-VFL with its helper process, in its own process group like a terminal job
    cmd = [sys.executable, "-m", "securefl", "run", "he-vfl", "--he", "ckks", "--epochs", "100"]
    proc = subprocess.Popen(cmd, start_new_session=True, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL)
    seen = b""
    while b"he-vfl" not in seen:  # the progress bar: training has started
        chunk = proc.stderr.read1(4096)
        assert chunk, seen.decode(errors="replace")
        seen += chunk
    helpers = _children(proc.pid)
    # Act: Ctrl-C goes to the terminal's process group
    os.killpg(proc.pid, signal.SIGINT)
    rest = proc.communicate(timeout=60)[1]
    # Assert
    err = (seen + rest).decode(errors="replace")
    assert helpers, "the packed CKKS run started no helper process"
    assert proc.returncode == 130 and "Traceback" not in err
    assert err.strip().splitlines()[-1].endswith("securefl run: interrupted")
    for _ in range(50):  # the helper leaves when its pipe closes, a moment after the caller
        left = [pid for pid in helpers if _alive(pid)]
        left += subprocess.run(["pgrep", "-g", str(proc.pid)], capture_output=True, text=True).stdout.split()
        if not left:
            break
        time.sleep(0.1)
    assert left == []


def test_ctrl_c_while_the_libraries_load_is_one_line(monkeypatch, capsys):
    import securefl.cli as cli

    # Arrange: Ctrl-C lands while the commands (and torch) are being imported
    def interrupted():
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "build_parser", interrupted)
    # Act
    code = cli.main(["run", "stfl"])
    # Assert
    assert code == 130 and capsys.readouterr().err == "securefl: interrupted\n"


@pytest.mark.parametrize(("argv", "message"), [
    (["stfl"], "passive party 'passive': VAE pretraining diverged"),
    # --passive-seed, --share-seed: the same initial weights, so divergence comes at the same step every run
    (["he-vfl", "--he", "ckks", "--batch-size", "16", "--passive-seed", "0", "--share-seed", "0"],
     "passive party 'passive', step 2: |value|"),
    (["he-vfl", "--he", "paillier", "--batch-size", "16", "--passive-seed", "0", "--share-seed", "0"],
     "training is likely diverging (a lower learning rate may help)"),
])
def test_a_diverging_run_is_named_as_such(capsys, argv, message):
    # Act: Adam at lr 9 on the bundled data diverges within a few steps
    code = main(["run", *argv, "--lr", "9", "--epochs", "5", "--no-progress"])
    # Assert
    err = capsys.readouterr().err.strip()
    assert code == 2 and message in err and len(err.splitlines()) == 1


@pytest.mark.parametrize("method", ["centralized", "hierarchical"])
def test_a_model_that_diverged_gets_no_accuracy(capsys, method):
    # Act: at lr 1e30 every test score is nan, which thresholding would call class 0 (a majority-class accuracy)
    code = main(["run", method, "--lr", "1e30", "--epochs", "3", "--no-progress"])
    # Assert
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1
    assert err.endswith(f"{method}: the trained model's test scores hold nan or inf (training diverged;"
                        " a lower learning rate may help)")


@pytest.mark.parametrize(("flags", "bound"), [([], 64.0), (["--dataset", "give_credit"], 512.0),
                                             (["--dataset", "give_credit", "--activation-bound", "100"], 100.0),
                                             (["--activation-bound", "8"], 8.0)])
def test_he_vfl_activation_bound_defaults_per_dataset_and_can_be_set(flags, bound):
    # Arrange: give_credit's heavy-tailed features pass 64 at the first step (the benchmark's bound is 512)
    from securefl.cli import build_parser
    from securefl.commands.run import method_config

    args = build_parser().parse_args(["run", "he-vfl", "--epochs", "1", "--batch-size", "64", *flags])
    # Act
    config = method_config("he-vfl", args, progress=None)
    # Assert
    assert config.activation_bound == bound and config.interactive_config().activation_bound == bound


def test_help_names_every_method_in_its_description(capsys):
    # Act
    with pytest.raises(SystemExit) as done:
        main(["run", "--help"])

    # Assert: every method under its family (markup: the sub-command test below)
    text = capsys.readouterr().out
    assert done.value.code == 0
    for method in ("stfl", "he-vfl", "hierarchical", "centralized", "chfl", "common", "simple", "local", "gl",
                   "fedavg", "tdcd"):
        assert f" {method}" in text.split("Each option applies")[0]


@pytest.mark.parametrize("command", ["datasets", "demo", "keygen", "psi", "run"])
def test_no_sub_command_help_shows_restructuredtext(capsys, command):
    # Act
    with pytest.raises(SystemExit):
        main([command, "--help"])

    # Assert
    text = capsys.readouterr().out
    assert text.startswith("usage: securefl ")
    assert not any(mark in text for mark in ("``", ":mod:", ":func:", ":class:"))
