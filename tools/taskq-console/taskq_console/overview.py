"""The Overview page (being built)."""

from flask import render_template

from . import db_blueprint

bp = db_blueprint("overview", __name__)


@bp.route("/")
def page():
    return render_template("placeholder.html", title="Overview")
