"""securefl run: an option the chosen method would ignore is a one-line error, not silently dropped."""

import argparse

import pytest

from protocols.errors import InputError
from securefl.cli import main
from securefl.commands.run_options import SCOPE, check_scope, flag


@pytest.mark.parametrize(("argv", "message"), [
    (["centralized", "--vae-epochs", "3"], "--vae-epochs applies to stfl, not to 'centralized'"),
    (["stfl", "--he", "paillier"], "--he applies to he-vfl, not to 'stfl'"),
    (["centralized", "--activation-bound", "8"], "--activation-bound applies to he-vfl, not to 'centralized'"),
    (["stfl", "--rounds", "3"], "--rounds applies to the horizontal methods and tdcd, not to 'stfl'"),
    (["he-vfl", "--no-secure-agg"], "--no-secure-agg applies to the horizontal methods and tdcd, not to 'he-vfl'"),
    (["stfl", "--label", "target"], "--label applies to --party-csv or --csv, not to 'stfl'"),
    (["gl", "--dataset", "gl_heart", "--batch-size", "32"],
     "--batch-size applies to the vertical, CHFL-family and TDCD"),
    (["gl", "--dataset", "gl_heart", "--features", "common=age"], "--features applies to the CHFL family"),
    (["local", "--dataset", "gl_heart", "--final", "average"], "--final applies to gl and fedavg"),
    (["local", "--dataset", "gl_heart", "--eta", "0"], "--eta applies to gl and fedavg"),
    (["chfl", "--dataset", "digits", "--client-column", "site"],
     "--client-column applies to --csv with the GL family, or with chfl"),
    (["chfl", "--dataset", "digits", "--aggregate", "batch"], "--aggregate applies to the GL family"),
    (["chfl", "--dataset", "digits", "--lrs", "0.001,0.01", "--lr", "0.1"], "--lr applies to runs without --lrs"),
    (["gl", "--dataset", "gl_heart", "--all-data"], "--all-data applies to the vertical methods"),
    (["stfl", "--id-column", "pid"], "--id-column applies to --party-csv"),
    (["chfl", "--dataset", "digits", "--features", "common=pixel_0;unique=pixel_1|pixel_2", "--common-ratio", "0.5"],
     "--common-ratio applies to a random CHFL feature split"),
    (["chfl", "--dataset", "digits", "--features", "common=pixel_0;unique=pixel_1|pixel_2", "--feature-seed", "3"],
     "--feature-seed applies to a random CHFL feature split"),
    (["chfl", "--dataset", "digits", "--batches", "3"], "--batches applies to the GL family"),
    (["local", "--dataset", "gl_heart", "--bn-stats", "local"], "--bn-stats applies to gl and fedavg"),
    (["common", "--dataset", "digits", "--mus", "0.5"], "--mus applies to chfl"),
    (["chfl", "--dataset", "digits", "--select", "val_loss"], "--select applies to the GL family"),
    (["chfl", "--dataset", "digits", "--features", "common=pixel_0;unique=pixel_1|pixel_2", "--clients", "3"],
     "--clients applies to a random CHFL feature split"),
])
def test_an_option_the_method_ignores_is_a_one_line_error(capsys, tmp_path, argv, message):
    # Arrange
    out = tmp_path / "r.json"
    # Act
    code = main(["run", *argv, "--no-progress", "--json", str(out)])
    # Assert: refused before any work, nothing written
    err = capsys.readouterr().err.strip()
    assert code == 2 and message in err and len(err.splitlines()) == 1
    assert not out.exists()


def _args(**given):
    base = {"method": "stfl", "party_csv": None, "csv": None, "features": None, "lrs": None}
    return argparse.Namespace(**{**base, **{dest: None for dest in SCOPE}, **given})


def test_options_at_their_default_or_in_scope_pass():
    # Arrange: every option at its default (None here), then options each method does use
    defaults = _args()
    stfl = _args(vae_epochs=3, all_data=False)
    gl = _args(method="gl", batches=4, aggregate="batch", final="average", secure_agg=False, rounds=2)
    local = _args(method="local", secure_agg=False)
    # Act / Assert: nothing raised
    check_scope(defaults, "vertical", lambda dest: None)
    check_scope(stfl, "vertical", lambda dest: {"all_data": False}.get(dest))
    check_scope(gl, "gl", lambda dest: None)
    check_scope(local, "chfl", lambda dest: None)


def test_the_error_names_the_switch_as_typed():
    # Act
    with pytest.raises(InputError) as info:
        check_scope(_args(secure_agg=False), "vertical", lambda dest: True if dest == "secure_agg" else None)
    # Assert
    assert str(info.value).startswith("--no-secure-agg applies to the horizontal methods and tdcd, not to 'stfl'")
    assert flag("bn_stats", "local") == "--bn-stats" and flag("secure_agg", True) == "--secure-agg"
