from __future__ import annotations

import math

import numpy as np
import pytest

from truss_lab.core._config import MemoryConfig
from truss_lab.core._errors import ConfigError
from truss_lab.core._models import LessonExtractionPolicy
from truss_lab.extract._gate import apply_gate


def test_defaults_are_off_and_070() -> None:
    cfg = MemoryConfig()
    assert cfg.lesson_extraction is LessonExtractionPolicy.off
    assert cfg.extraction_min_salience == 0.70
    assert MemoryConfig.load(env={}) == cfg


def test_layers_in_order(tmp_path) -> None:
    toml = tmp_path / "truss.toml"
    toml.write_text('[memory]\nlesson_extraction = "on"\nextraction_min_salience = 0.5\n')
    assert MemoryConfig.load(toml, env={}).extraction_min_salience == 0.5
    env = {"TRUSS_LAB_EXTRACTION_MIN_SALIENCE": "0.6"}
    cfg = MemoryConfig.load(toml, env=env)
    assert (cfg.lesson_extraction, cfg.extraction_min_salience) == ("on", 0.6)
    cfg = MemoryConfig.load(toml, env=env, extraction_min_salience=0.9,
                            lesson_extraction="model-scored")
    assert cfg.extraction_min_salience == 0.9
    assert cfg.lesson_extraction is LessonExtractionPolicy.model_scored
    # TRUSS_LAB_CONFIG names the file when no path is given.
    assert MemoryConfig.load(env={"TRUSS_LAB_CONFIG": str(toml)}).lesson_extraction == "on"


@pytest.mark.parametrize("bad", [math.nan, -0.01, 1.01, math.inf, "x", True, None])
def test_bad_salience_names_the_layer(tmp_path, bad) -> None:
    if bad is None:
        with pytest.raises(ConfigError, match="config file"):
            toml = tmp_path / "c.toml"
            toml.write_text('[memory]\nextraction_min_salience = "nan"\n')
            MemoryConfig.load(toml, env={})
        return
    with pytest.raises(ConfigError, match="arguments"):
        MemoryConfig(extraction_min_salience=bad)
    with pytest.raises(ConfigError, match="arguments"):
        MemoryConfig.load(env={}, extraction_min_salience=bad)
    env = {"TRUSS_LAB_EXTRACTION_MIN_SALIENCE": str(bad)}
    if not isinstance(bad, bool):
        with pytest.raises(ConfigError, match="environment TRUSS_LAB_EXTRACTION_MIN_SALIENCE"):
            MemoryConfig.load(env=env)


@pytest.mark.parametrize("edge", [0.0, 1.0, 0.7])
def test_edges_accepted(edge) -> None:
    assert MemoryConfig(extraction_min_salience=edge).extraction_min_salience == edge


def test_bad_policy_and_unknown_setting(tmp_path) -> None:
    with pytest.raises(ConfigError, match="off, on, model-scored"):
        MemoryConfig.load(env={"TRUSS_LAB_LESSON_EXTRACTION": "always"})
    toml = tmp_path / "c.toml"
    toml.write_text("[memory]\nthreshold = 0.5\n")
    with pytest.raises(ConfigError, match="unknown setting 'threshold'"):
        MemoryConfig.load(toml, env={})
    toml.write_text("[memory\n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        MemoryConfig.load(toml, env={})


@pytest.mark.parametrize(
    ("policy", "salience", "written"),
    [
        ("off", 0.99, False),
        ("on", 0.0, True),
        ("model-scored", 0.70, True),
        ("model-scored", 0.6999, False),
        ("model-scored", None, False),
    ],
)
def test_the_gate_at_the_default_threshold(policy, salience, written) -> None:
    # apply_gate is the one gate (MemoryConfig has no second one); a missing salience
    # is NaN there, which never passes
    score = np.array([np.nan if salience is None else salience])
    got = apply_gate(score, np.array([True]), MemoryConfig(lesson_extraction=policy))
    assert bool(got[0]) is written
