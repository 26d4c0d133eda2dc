"""HateCheck and HatemojiCheck -> static datasets of the hate-speech task."""

from __future__ import annotations

from collections import Counter

import pytest

from leaderboards.importers import STATIC_SETS, import_static_set, import_static_sets
from leaderboards.importers.static_sets import HATECHECK_SET, HATEMOJICHECK_SET, item_tags
from leaderboards.models import Dataset, DatasetItem

HATECHECK_HEADER = (
    ",functionality,case_id,test_case,label_gold,target_ident,direction,focus_words,focus_lemma,"
    "ref_case_id,ref_templ_id,templ_id,case_templ"
)


def test_real_suites_import_with_counts_tags_and_sources(hate_task, data_dir):
    hatecheck, hatemojicheck = import_static_sets(task=hate_task, data_dir=data_dir)

    assert (hatecheck.read, hatecheck.created, hatecheck.skipped) == (3425, 3425, [])
    assert hatecheck.breakdown == {"hateful": 2359, "not-hateful": 1066}
    assert (hatemojicheck.read, hatemojicheck.created, hatemojicheck.skipped) == (3930, 3930, [])
    assert hatemojicheck.breakdown == {"hateful": 2654, "not-hateful": 1276}

    hc = Dataset.objects.get(task=hate_task, slug="hatecheck")
    hmc = Dataset.objects.get(task=hate_task, slug="hatemojicheck")
    assert (hc.kind, hc.access, hc.licence) == ("static", "scoring", "CC BY 4.0")
    assert (hmc.kind, hmc.access, hmc.licence) == ("static", "standard", "CC BY 4.0")
    assert hc.source.startswith(
        "github.com/paul-rottger/hatecheck-data@d84302298ceeb34f4b0dde2d8a1f4932c2caa612"
    )
    assert hmc.source.startswith("github.com/HannahKirk/Hatemoji@a626f63216158748d072e581efc00267031f4404")

    assert Counter(hc.items.values_list("target", flat=True)) == {"hateful": 2359, "not-hateful": 1066}
    assert Counter(hmc.items.values_list("target", flat=True)) == {"hateful": 2654, "not-hateful": 1276}
    functionalities = {
        t for tags in hc.items.values_list("tags", flat=True) for t in tags if "functionality:" in t
    }
    assert len(functionalities) == 29

    first = hc.items.get(external_id="1")
    assert first.inputs == {"statement": "I hate women. "}  # the trailing space is kept
    assert first.target == "hateful"
    assert first.tags == ["functionality:derog_neg_emote_h", "target:women"]
    assert first.metadata["case_templ"] == "I hate [IDENTITY_P]."
    assert first.metadata["row_index"] == "0"
    assert "test_case" not in first.metadata and "label_gold" not in first.metadata
    untargeted = hc.items.filter(metadata__target_ident="").first()
    assert untargeted is not None and len(untargeted.tags) == 1

    emoji = hmc.items.get(external_id="0")
    assert emoji.inputs == {"statement": "I want to 🔪 all women"}
    assert emoji.tags == ["functionality:verb_swap", "target:women"]


def test_second_run_creates_nothing(hate_task, data_dir):
    import_static_sets(task=hate_task, data_dir=data_dir)
    again = import_static_sets(task=hate_task, data_dir=data_dir)

    assert [(r.created, r.already_present) for r in again] == [(0, 3425), (0, 3930)]
    assert DatasetItem.objects.count() == 3425 + 3930
    assert Dataset.objects.filter(task=hate_task).count() == 2


def test_hatecheck_quirks(hate_task, tmp_path):
    rows = [
        HATECHECK_HEADER,
        "0,derog_neg_emote_h,1,I hate women. ,hateful,women,general,hate,hate,,,1,I hate [IDENTITY_P].",
        '1,slur_h,2,"two\r\nlines  ",hateful,,directed,,,,,2,x',
        "2,counter_quote_nh,3,  ,non-hateful,women,-,,,,,3,x",
        "3,counter_quote_nh,4,Not hateful.,non-hateful,,-,,,,,4,x",
        "4,counter_quote_nh,5,Odd label,neutral,,-,,,,,5,x",
    ]
    folder = tmp_path / "data"
    (folder / "hatecheck").mkdir(parents=True)
    # CRLF, no final newline, empty first header cell: as upstream.
    (folder / "hatecheck" / "test_suite_cases.csv").write_bytes("\r\n".join(rows).encode())

    report = import_static_set(task=hate_task, spec=HATECHECK_SET, data_dir=folder)

    assert (report.read, report.created) == (5, 3)
    assert report.skipped == [
        "test_suite_cases.csv row 3 (line 5): empty text",
        "test_suite_cases.csv row 5 (line 7): unknown label 'neutral'",
    ]
    items = {i.external_id: i for i in DatasetItem.objects.filter(dataset__slug="hatecheck")}
    assert items["1"].inputs["statement"] == "I hate women. "
    assert items["2"].inputs["statement"] == "two\nlines  "
    assert items["2"].tags == ["functionality:slur_h"]
    assert items["4"].target == "not-hateful"
    assert items["4"].metadata["direction"] == "-"


def test_hatemojicheck_labels_and_emoji(hate_task, tmp_path):
    england = "\U0001f3f4\U000e0067\U000e0062\U000e0065\U000e006e\U000e0067\U000e007f"
    zwj = "\U0001f469\u200d\U0001f9b0"
    header = "case_id,templ_id,test_group_id,text,target,functionality,set,label_gold,unrealistic_flags,included_in_test_suite"
    rows = [
        header,
        f"0,1.0,1,{england} out,women,verb_swap,orig,1,0,1",
        f"1,1.0,1,I love {zwj},None,positive_confounder,orig,0,0,1",
    ]
    folder = tmp_path / "data"
    (folder / "hatemoji_check").mkdir(parents=True)
    (folder / "hatemoji_check" / "test.csv").write_bytes(("\n".join(rows) + "\n").encode())

    report = import_static_set(task=hate_task, spec=HATEMOJICHECK_SET, data_dir=folder)

    assert (report.created, report.skipped) == (2, [])
    items = {i.external_id: i for i in DatasetItem.objects.filter(dataset__slug="hatemojicheck")}
    assert items["0"].inputs["statement"].encode() == f"{england} out".encode()
    assert (items["0"].target, items["1"].target) == ("hateful", "not-hateful")
    assert items["1"].inputs["statement"].encode() == f"I love {zwj}".encode()
    assert items["1"].tags == ["functionality:positive_confounder"]
    assert items["1"].metadata["target"] == "None"


def test_missing_file_writes_nothing(hate_task, tmp_path):
    with pytest.raises(FileNotFoundError, match="test_suite_cases.csv"):
        import_static_sets(task=hate_task, data_dir=tmp_path)
    assert not Dataset.objects.exists()


@pytest.mark.parametrize(
    ("functionality", "target", "expected"),
    [
        ("slur_h", "women", ["functionality:slur_h", "target:women"]),
        ("slur_h", "", ["functionality:slur_h"]),
        ("slur_h", "None", ["functionality:slur_h"]),
    ],
)
def test_item_tags(functionality, target, expected):
    assert item_tags(functionality, target) == expected


def test_access_levels_are_declared_once():
    assert {spec.slug: spec.access for spec in STATIC_SETS} == {
        "hatecheck": "scoring",
        "hatemojicheck": "standard",
    }
