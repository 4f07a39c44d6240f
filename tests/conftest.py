"""Shared fixtures, and the `slow` marker (issue 20 part 4).

`pytest -m "not slow"` is the quick run while editing; plain `pytest` (CI) still runs everything. A test is slow
when it took over 1.0 s in a `--durations` run on the shared 2-core machine (over 1.75 s with four other jobs
running beside it, or over 0.6 s alone: the cut that keeps the quick run under two minutes), or it spawns many
subprocesses, builds a wheel, starts a server or a browser. Files that are (almost) all slow carry `pytestmark = pytest.mark.slow`; the
slow tests of mixed files are named in SLOW below (a name without "[...]" marks every parametrisation), and tests
that use an expensive module fixture are found by SLOW_FIXTURES. A name in SLOW that matches no collected test of
its file is reported as a warning: rename it here with the test.
"""

import os as _os
import tempfile as _tempfile
import warnings as _warnings

import pytest as _pytest
from journal_export import journal_file  # noqa: F401  (real .journal files from export entries; tests/journal_export.py)

# No test may write the real user's state dir: every `explain` run (in-process or as a subprocess, which inherits
# this environment) records into a throwaway history unless a test points LOGDOCTOR_HISTORY somewhere itself.
_STATE = _tempfile.mkdtemp(prefix="logdoctor-test-state-")
_os.environ["XDG_STATE_HOME"] = _STATE
_os.environ.pop("LOGDOCTOR_HISTORY", None)


@_pytest.fixture(autouse=True)
def _own_state_dir(tmp_path_factory, monkeypatch):
    """Each test gets its own state dir: attempts recorded by one test's `explain` runs never feed another test's
    cross-attempt reasoning (the seed fixtures share a host and a unit)."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path_factory.mktemp("state")))
    monkeypatch.delenv("LOGDOCTOR_HISTORY", raising=False)


@_pytest.fixture
def history_db(tmp_path, monkeypatch):
    """A fresh history database path, also exported as LOGDOCTOR_HISTORY for subprocesses."""
    path = tmp_path / "history.db"
    monkeypatch.setenv("LOGDOCTOR_HISTORY", str(path))
    return path


SLOW: dict[str, frozenset[str]] = {
    "test_atlas.py": frozenset(
        {
            "test_a_log_line_holding_only_the_first_line_of_a_message_resolves",
            "test_a_rule_that_fires_outranks_the_atlas",
            "test_atlas_cli_bad_file_is_one_line_exit_2",
            "test_atlas_lookup_cli",
            "test_atlas_stats_cli",
            "test_atlas_verdicts_cite_the_engine_source",
            "test_explain_cites_the_engine_source",
            "test_shipped_atlas_agrees_with_the_build_script",
        }
    ),
    "test_atomic.py": frozenset(
        {
            "test_rules_docs_out_is_atomic",
        }
    ),
    "test_bad_input.py": frozenset(
        {
            "test_rule_with_unknown_condition",
        }
    ),
    "test_catalogues.py": frozenset(
        {
            "test_a_bare_cuda_line_the_engine_went_past_is_not_a_failure",
            "test_a_bare_fatal_cuda_line_is_a_failure",
            "test_a_bare_nccl_error_line_is_a_distributed_failure",
            "test_a_non_fatal_cuda_line_is_not",
            "test_catalogues_load_lazily",
            "test_error_802_is_a_host_fault_naming_the_fabric_manager",
            "test_triage_does_not_flag_a_host_for_an_application_xid",
        }
    ),
    "test_classifier.py": frozenset(
        {
            "test_classifier_alone_gets_most_fixtures_right",
            "test_nonsense_with_the_word_error_is_never_a_confident_cause",
            "test_train_command_writes_the_same_bytes_twice",
            "test_training_is_reproducible",
        }
    ),
    "test_cli.py": frozenset(
        {
            "test_every_fixture_json_validates_and_exit_code_matches_label",
            "test_journal_file_with_unit",
            "test_json_through_the_cli_and_exit_code",
            "test_unknown_exits_three_and_says_what_to_collect",
        }
    ),
    "test_config_dump.py": frozenset(
        {
            "test_any_prefix_parses_to_a_consistent_subset",
            "test_garbage_never_raises",
        }
    ),
    "test_docs_cmd.py": frozenset(
        {
            "test_every_rule_id_in_a_help_example_exists",
            "test_rules_test_takes_a_folder_of_cases",
        }
    ),
    "test_engine_names.py": frozenset(
        {
            "test_no_engine_name_outside_engines",
        }
    ),
    "test_fix.py": frozenset(
        {
            "test_plain_command_line_and_docker_run",
            "test_refuses_when_nothing_is_flag_shaped[log1-cause is unknown]",
        }
    ),
    "test_fixture_corpus.py": frozenset(
        {
            "test_docs_catalogue_is_current",
            "test_every_cause_and_engine_is_covered",
            "test_generator_reproduces_committed_files",
            "test_ids_unique_and_match_folders",
        }
    ),
    "test_fuzz_archives.py": frozenset(
        {
            "test_archive",
            "test_tar_headers",
        }
    ),
    "test_levers.py": frozenset(
        {
            "test_step_never_repeats_and_respects_bounds_and_direction",
        }
    ),
    "test_live_journal.py": frozenset(
        {
            "test_explain_reads_the_live_journal",
        }
    ),
    "test_markers.py": frozenset(
        {
            "test_not_slow_leaves_out_the_named_tests_and_keeps_the_rest",
        }
    ),
    "test_no_unsafe_patterns.py": frozenset(
        {
            "test_repository_has_no_unsafe_patterns",
        }
    ),
    "test_one_pipeline.py": frozenset(
        {
            "test_zstd_reads_alike",
        }
    ),
    "test_outputs.py": frozenset(
        {
            "test_out_dev_stdout_and_dash_are_streams",
            "test_rule_cache_stat_note_ignores_planted_links_and_foreign_notes",
            "test_symlink_stays_a_link_and_its_target_is_replaced",
            "test_triage_out_to_a_null_device_keeps_the_node",
        }
    ),
    "test_preflight.py": frozenset(
        {
            "test_a_unit_is_checked_with_its_drop_ins_in_force",
            "test_bad_input_is_one_line_and_exit_2[argv4-not readable nvidia-smi XML]",
            "test_bad_input_is_one_line_and_exit_2[argv5-no model config]",
            "test_draft_model_adds_its_weights_and_kv",
            "test_history_hardware_fault_on_this_host_is_no_go",
            "test_json_validates_against_the_schema",
            "test_live_nvml_reads_memory_and_counters",
            "test_old_vllm_captures_graphs_outside_the_utilization",
            "test_sglang_static_fraction_sized_from_the_shortfall",
            "test_sliding_window_model_splits_sglang_pool_into_full_and_window_tokens",
            "test_value_tried_on_this_host_is_never_proposed",
            "test_vllm_healthy_start_is_go_and_text_shows_derivations",
            "test_vllm_hybrid_json_has_linear_state",
            "test_vllm_weights_that_do_not_fit_are_weights_oom",
        }
    ),
    "test_preflight_validate.py": frozenset(
        {
            "test_catalogue_covers_the_cases",
        }
    ),
    "test_reliability.py": frozenset(
        {
            "test_api_applies_the_same_policy",
            "test_row_10m_short_lines",
            "test_row_endless_binary",
            "test_row_gz_truncated",
            "test_row_gzip_bomb",
            "test_row_gzip_bomb_line",
            "test_row_history_corrupt",
            "test_row_history_locked",
            "test_row_history_read_only",
            "test_row_invalid_utf8",
            "test_row_journal_truncated",
            "test_row_line_1_5mb_mid_journal",
            "test_row_line_50mb",
            "test_row_mixed_crlf",
            "test_row_nul_many",
            "test_row_nul_one",
            "test_row_rule_unknown_lever",
            "test_row_unit_no_execstart",
            "test_row_unknown_language",
            "test_row_utf16_be_bom",
            "test_row_utf16_bom",
            "test_row_utf8_bom",
            "test_truncated_xz_bz2_keep_what_was_read",
        }
    ),
    "test_rules.py": frozenset(
        {
            "test_rules_lint_is_clean",
            "test_rules_test_passes",
        }
    ),
    "test_scan_explain.py": frozenset(
        {
            "test_damage_counts_cover_every_line",
            "test_explain_through_the_scan_equals_the_full_parse",
            "test_explain_through_the_scan_equals_triage",
        }
    ),
    "test_startup_cache.py": frozenset(
        {
            "test_cached_rules_equal_parsed_rules",
            "test_lazy_family_patterns_and_frame_sets_answer_like_the_regexes",
            "test_prefilter_is_sound_on_every_rule_regex_and_fixture_line",
            "test_user_rules_override_through_the_cli",
        }
    ),
    "test_startup_dataclass.py": frozenset(
        {
            "test_explain_path_compiles_no_dataclass_method",
        }
    ),
    "test_stream.py": frozenset(
        {
            "test_cli_streams_a_big_file",
            "test_cli_streams_a_big_pipe",
            "test_invalid_utf8_across_chunks",
            "test_long_serving_stretch_is_bounded_and_verdict_unchanged",
            "test_routine_lines_of_no_engine_are_bounded",
        }
    ),
    "test_text_fit.py": frozenset(
        {
            "test_a_narrow_pane_never_splits_a_flag_at_its_hyphens",
            "test_every_fix_and_action_of_every_failing_fixture_is_in_the_text",
            "test_the_cli_verdict_follows_columns_and_prints_every_action[132]",
            "test_the_cli_verdict_follows_columns_and_prints_every_action[80]",
            "test_timeline_shows_phase_start_duration_and_gaps",
        }
    ),
    "test_triage_csv.py": frozenset(
        {
            "test_cli_csv_imports_no_pandas",
            "test_rows_csv_is_the_frames_csv_on_fixtures",
        }
    ),
    "test_triage_polish.py": frozenset(
        {
            "test_a_dollar_in_a_host_name_never_costs_the_report",
            "test_an_unreachable_scheduler_is_a_one_line_usage_error",
            "test_baseline_marks_new_and_regressed_signatures",
            "test_csv_neutralises_formulas_and_flattens_cells",
            "test_markdown_is_text_with_integer_lines",
            "test_no_host_rows_are_named_by_their_file",
            "test_scheduler_local_starts_a_cluster_with_the_local_rows",
            "test_the_same_log_in_a_folder_and_its_tarball_is_counted_once",
        }
    ),
    "test_triage_scanner.py": frozenset(
        {
            "test_compiled_database_is_cached_and_a_bad_entry_is_rebuilt",
            "test_fixture_logs_scan_alike",
            "test_noise_with_non_ascii_scans_alike",
            "test_pattern_groups_are_cached_and_a_bad_entry_is_probed_again",
        }
    ),
    "test_triage_signatures.py": frozenset(
        {
            "test_one_crash_is_not_split",
            "test_prefilter_never_hides_a_failure",
            "test_reduced_parse_of_a_big_attempt_matches_the_full_one",
        }
    ),
    "test_trust_inputs.py": frozenset(
        {
            "test_explain_fifo_note",
            "test_explain_growing_file",
            "test_explain_open_pipe_note",
            "test_lone_cr_and_progress_bars",
            "test_plain_tar_not_gzip",
            "test_refused_gzip_same_message_on_both_paths",
            "test_same_policy_on_both_paths",
            "test_tar_journal_sparse",
            "test_tar_long_name_header",
            "test_tar_many_members",
            "test_tar_member_errors",
            "test_tar_nested",
            "test_tar_rejected_member_skipped_raw",
            "test_tar_special_members",
            "test_terminal_names",
            "test_walk_fifo_symlink_and_non_logs",
        }
    ),
    "test_trust_rules.py": frozenset(
        {
            "test_a_bad_regex_names_its_file",
            "test_a_pattern_re2_cannot_compile_is_linted_first",
            "test_a_quoted_kernel_report_is_not_evidence[sglang-echo]",
            "test_a_user_rule_of_the_wrong_shape_is_refused_not_a_crash[{attempts: 3}]",
            "test_a_user_rule_of_the_wrong_shape_is_refused_not_a_crash[{exit_code: x}]",
            "test_a_user_rule_of_the_wrong_shape_is_refused_not_a_crash[{flag: 5}]",
            "test_a_user_rule_of_the_wrong_shape_is_refused_not_a_crash[{systemd: 5}]",
            "test_cli_many_tracebacks_keep_the_verdict",
            "test_deeply_nested_groups_are_a_bad_regex_naming_the_file",
            "test_evidence_store_is_bounded_in_whole_stanzas",
            "test_explain_text_substitutes_names_only[format {mem_fraction.__class__.__mro__}]",
            "test_explain_text_substitutes_names_only[x {weights_gb:>4000000000}]",
            "test_explain_text_substitutes_names_only[{mem_fraction[0]}]",
            "test_fuzz_crash_reading_with_an_unknown_op",
            "test_log_controls_are_visible_in_explain_output",
            "test_overlapping_alternation_runs_under_re2_and_is_linted",
            "test_the_bundled_rules_still_lint_clean",
            "test_triage_agrees_with_explain_on_xids",
            "test_yaml_alias_bomb_is_refused_at_once",
            "test_yaml_depth_and_node_caps",
        }
    ),
    "test_units.py": frozenset(
        {
            "test_explain_and_triage_agree_on_every_engine_unit[export]",
        }
    ),
    "test_unseen_shapes.py": frozenset(
        {
            "test_confidence_at_0_8_is_right_95_percent_on_unseen_variant_groups",
            "test_cut_traceback_is_a_failure_with_window_cut[rt10-a10-cut-traceback]",
            "test_engine_defect_is_named_not_forced_into_memory",
            "test_hint_whose_condition_is_false_is_not_evidence",
            "test_process_manager_prefix_is_peeled[rt10-a18-prefix-torchrun-torchrun]",
            "test_restart_and_foreign_line_perturbations_keep_every_failure",
            "test_restart_in_progress_json_names_attempts_and_note",
            "test_restart_in_progress_with_history_keeps_the_verdicts_fix",
            "test_restart_loop_attempts_are_counted_from_their_first_start_line",
            "test_unseen_shape_verdict_matches_label[rt10-a14-fatal-precursor]",
            "test_unseen_shape_verdict_matches_label[rt10-a16-fatal-precursor]",
            "test_unseen_shape_verdict_matches_label[rt10-a17-prefix-ray]",
            "test_unseen_shape_verdict_matches_label[rt10-a18-prefix-torchrun]",
            "test_unseen_shape_verdict_matches_label[rt10-a19-prefix-mpirun]",
            "test_unseen_shape_verdict_matches_label[rt10-a24-bait-hint-exitcode]",
            "test_unseen_shape_verdict_matches_label[rt10-a25-bait-hint-possible-solutions]",
            "test_unseen_shape_verdict_matches_label[rt10-a26-engine-defect]",
            "test_unseen_shape_verdict_matches_label[rt10-a27-engine-defect]",
            "test_unseen_shape_verdict_matches_label[rt10-a33-systemd-oom-line]",
        }
    ),
}


# module-scoped fixtures that cost seconds to build (a classifier fitted, every fixture triaged, a live journal, the
# preflight replay of every fixture): every test that uses one is slow, whichever of them pays the set-up
SLOW_FIXTURES: dict[str, frozenset[str]] = {
    "test_classifier.py": frozenset({"examples", "fitted"}),
    "test_triage_signatures.py": frozenset({"fixture_rows"}),
    "test_live_journal.py": frozenset({"live"}),
    "test_preflight_validate.py": frozenset({"rows"}),
}


@_pytest.hookimpl(tryfirst=True)  # before -m deselects
def pytest_collection_modifyitems(config, items):
    """Mark the tests SLOW names; warn about names that match no collected test of a collected file."""
    seen: dict[str, set[str]] = {}
    for item in items:
        if SLOW_FIXTURES.get(item.path.name, frozenset()) & set(getattr(item, "fixturenames", ())):
            item.add_marker(_pytest.mark.slow)
        names = SLOW.get(item.path.name)
        if names is None:
            continue
        hit = seen.setdefault(item.path.name, set())
        for name in (item.name, item.name.split("[", 1)[0]):
            if name in names:
                item.add_marker(_pytest.mark.slow)
                hit.add(name)
    for file, hit in seen.items():
        for name in sorted(SLOW[file] - hit):
            _warnings.warn(f"tests/conftest.py SLOW names {file}::{name}, which was not collected", stacklevel=1)
