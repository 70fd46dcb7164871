"""The Limits and schedules page (being built)."""

from flask import render_template

from . import db_blueprint

bp = db_blueprint("flow", __name__)


@bp.route("/flow")
def page():
    return render_template("placeholder.html", title="Limits and schedules")
