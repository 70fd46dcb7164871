"""The Runs page (being built)."""

from flask import render_template

from . import db_blueprint

bp = db_blueprint("runs", __name__)


@bp.route("/runs")
def page():
    return render_template("placeholder.html", title="Runs")
