"""What researcher pages and downloads show of a survey's versions and corrections (``store.versioning``)."""

from __future__ import annotations

from ..exports.labels import SurveyVersion, survey_version
from .db import get_store
from .research import bp


def export_revisions(slug: str) -> dict:
    """Return the survey's revision record for its codebook (version, wording history)."""
    return get_store().revision_record(slug)


def file_version(slug: str) -> SurveyVersion | None:
    """Return the version the files of responses carry (``labels.survey_version``), or None for a survey with one."""
    return survey_version(get_store().versions(slug), slug)


def csv_version(slug: str) -> int | None:
    """Return the version responses.csv carries in its ``version`` column, or None for a survey with one version."""
    version = file_version(slug)
    return version.number if version is not None else None


@bp.app_template_global()
def survey_versions(slug: str) -> list[dict]:
    """Return every version of the survey's family for the results page (one entry: no versions to show)."""
    return get_store().versions(slug)


@bp.app_template_global()
def survey_correctable(slug: str) -> bool:
    """Return whether the survey is published, current and not archived: its text and design can be corrected."""
    from .revising import is_published_edit

    return is_published_edit(slug)
