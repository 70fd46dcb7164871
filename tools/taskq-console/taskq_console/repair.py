"""The Dead letters page (being built)."""

from flask import render_template

from . import db_blueprint

bp = db_blueprint("repair", __name__)


@bp.route("/repair")
def page():
    return render_template("placeholder.html", title="Dead letters")
