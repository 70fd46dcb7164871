/*-------------------------------------------------------------------------
 *
 * json.c
 *	  A small JSON reader for what a workflow step's child prints on its
 *	  standard output: one JSON object, read into its top-level members;
 *	  and a check that what a --result action's child printed is one JSON
 *	  value (of any type), sent as it is to be the task's result.
 *
 * The whole text is checked against the JSON grammar (RFC 8259), with
 * nesting limited to TQW_JSON_MAX_DEPTH so that a hostile child cannot
 * exhaust the stack.  Each top-level member is returned with its decoded
 * key, its type, the raw text of its value (an object such as a context is
 * sent to the database as that text and parsed again there, as jsonb) and,
 * for a string, its decoded value (UTF-8; \u escapes and surrogate pairs
 * decoded; \u0000 refused, as jsonb refuses it).  A repeated key: the last
 * one wins, as in jsonb.  Error messages name the byte offset.
 *
 * No state outside the call; single-threaded like the rest of the worker.
 *
 *-------------------------------------------------------------------------
 */
#include "worker.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TQW_JSON_MAX_DEPTH 256

typedef struct Reader
{
	const char *s;
	size_t		len;
	size_t		pos;
	char	   *err;
	size_t		errlen;
	bool		failed;
} Reader;

static void
fail(Reader *r, const char *fmt,...) __attribute__((format(printf, 2, 3)));

static void
fail(Reader *r, const char *fmt,...)
{
	va_list		ap;
	char		msg[256];

	if (r->failed)
		return;
	r->failed = true;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	snprintf(r->err, r->errlen, "%s at byte %zu", msg, r->pos);
}

static void
skip_ws(Reader *r)
{
	while (r->pos < r->len &&
		   (r->s[r->pos] == ' ' || r->s[r->pos] == '\t' ||
			r->s[r->pos] == '\n' || r->s[r->pos] == '\r'))
		r->pos++;
}

static int
hex4(Reader *r)
{
	int			v = 0;

	if (r->pos + 4 > r->len)
	{
		fail(r, "incomplete \\u escape");
		return -1;
	}
	for (int i = 0; i < 4; i++)
	{
		char		c = r->s[r->pos++];

		v <<= 4;
		if (c >= '0' && c <= '9')
			v |= c - '0';
		else if (c >= 'a' && c <= 'f')
			v |= c - 'a' + 10;
		else if (c >= 'A' && c <= 'F')
			v |= c - 'A' + 10;
		else
		{
			fail(r, "bad \\u escape");
			return -1;
		}
	}
	return v;
}

static size_t
put_utf8(char *out, unsigned cp)
{
	if (cp < 0x80)
	{
		out[0] = (char) cp;
		return 1;
	}
	if (cp < 0x800)
	{
		out[0] = (char) (0xC0 | (cp >> 6));
		out[1] = (char) (0x80 | (cp & 0x3F));
		return 2;
	}
	if (cp < 0x10000)
	{
		out[0] = (char) (0xE0 | (cp >> 12));
		out[1] = (char) (0x80 | ((cp >> 6) & 0x3F));
		out[2] = (char) (0x80 | (cp & 0x3F));
		return 3;
	}
	out[0] = (char) (0xF0 | (cp >> 18));
	out[1] = (char) (0x80 | ((cp >> 12) & 0x3F));
	out[2] = (char) (0x80 | ((cp >> 6) & 0x3F));
	out[3] = (char) (0x80 | (cp & 0x3F));
	return 4;
}

/*
 * A string at r->pos (the opening quote).  With out != NULL the decoded
 * value is returned there (malloc'd, NUL-terminated).
 */
static void
read_string(Reader *r, char **out)
{
	char	   *buf = NULL;
	size_t		n = 0;

	r->pos++;					/* the quote */
	if (out != NULL)
	{
		/* decoding never makes the text longer */
		buf = malloc(r->len - r->pos + 1);
		if (buf == NULL)
		{
			fail(r, "out of memory");
			return;
		}
	}
	for (;;)
	{
		unsigned char c;

		if (r->pos >= r->len)
		{
			fail(r, "unterminated string");
			break;
		}
		c = (unsigned char) r->s[r->pos];
		if (c == '"')
		{
			r->pos++;
			break;
		}
		if (c < 0x20)
		{
			fail(r, "control character in a string");
			break;
		}
		if (c != '\\')
		{
			if (buf)
				buf[n++] = (char) c;
			r->pos++;
			continue;
		}
		r->pos++;
		if (r->pos >= r->len)
		{
			fail(r, "unterminated string");
			break;
		}
		c = (unsigned char) r->s[r->pos++];
		switch (c)
		{
			case '"':
			case '\\':
			case '/':
				if (buf)
					buf[n++] = (char) c;
				break;
			case 'b':
				if (buf)
					buf[n++] = '\b';
				break;
			case 'f':
				if (buf)
					buf[n++] = '\f';
				break;
			case 'n':
				if (buf)
					buf[n++] = '\n';
				break;
			case 'r':
				if (buf)
					buf[n++] = '\r';
				break;
			case 't':
				if (buf)
					buf[n++] = '\t';
				break;
			case 'u':
				{
					int			cp = hex4(r);

					if (cp < 0)
						break;
					if (cp >= 0xD800 && cp <= 0xDBFF)
					{
						int			lo;

						if (r->pos + 2 > r->len || r->s[r->pos] != '\\' || r->s[r->pos + 1] != 'u')
						{
							fail(r, "lone surrogate in a \\u escape");
							break;
						}
						r->pos += 2;
						lo = hex4(r);
						if (lo < 0)
							break;
						if (lo < 0xDC00 || lo > 0xDFFF)
						{
							fail(r, "bad surrogate pair in a \\u escape");
							break;
						}
						cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
					}
					else if (cp >= 0xDC00 && cp <= 0xDFFF)
					{
						fail(r, "lone surrogate in a \\u escape");
						break;
					}
					if (cp == 0)
					{
						fail(r, "\\u0000 is not allowed");
						break;
					}
					if (buf)
						n += put_utf8(buf + n, (unsigned) cp);
				}
				break;
			default:
				r->pos--;
				fail(r, "bad escape \\%c", c);
				break;
		}
		if (r->failed)
			break;
	}
	if (r->failed)
	{
		free(buf);
		return;
	}
	if (buf)
	{
		buf[n] = '\0';
		*out = buf;
	}
}

static void
read_number(Reader *r)
{
	size_t		p = r->pos;

	if (p < r->len && r->s[p] == '-')
		p++;
	if (p < r->len && r->s[p] == '0')
		p++;
	else if (p < r->len && r->s[p] >= '1' && r->s[p] <= '9')
		while (p < r->len && r->s[p] >= '0' && r->s[p] <= '9')
			p++;
	else
	{
		fail(r, "bad number");
		return;
	}
	if (p < r->len && r->s[p] == '.')
	{
		p++;
		if (p >= r->len || r->s[p] < '0' || r->s[p] > '9')
		{
			r->pos = p;
			fail(r, "bad number");
			return;
		}
		while (p < r->len && r->s[p] >= '0' && r->s[p] <= '9')
			p++;
	}
	if (p < r->len && (r->s[p] == 'e' || r->s[p] == 'E'))
	{
		p++;
		if (p < r->len && (r->s[p] == '+' || r->s[p] == '-'))
			p++;
		if (p >= r->len || r->s[p] < '0' || r->s[p] > '9')
		{
			r->pos = p;
			fail(r, "bad number");
			return;
		}
		while (p < r->len && r->s[p] >= '0' && r->s[p] <= '9')
			p++;
	}
	r->pos = p;
}

static void read_value(Reader *r, int depth, JsonType *type);

static void
read_container(Reader *r, int depth, bool object)
{
	char		close = object ? '}' : ']';
	bool		first = true;

	if (depth >= TQW_JSON_MAX_DEPTH)
	{
		fail(r, "nested deeper than %d", TQW_JSON_MAX_DEPTH);
		return;
	}
	r->pos++;
	for (;;)
	{
		skip_ws(r);
		if (r->pos < r->len && r->s[r->pos] == close && first)
		{
			r->pos++;
			return;
		}
		if (object)
		{
			if (r->pos >= r->len || r->s[r->pos] != '"')
			{
				fail(r, "expected a string key");
				return;
			}
			read_string(r, NULL);
			if (r->failed)
				return;
			skip_ws(r);
			if (r->pos >= r->len || r->s[r->pos] != ':')
			{
				fail(r, "expected ':'");
				return;
			}
			r->pos++;
		}
		read_value(r, depth + 1, NULL);
		if (r->failed)
			return;
		skip_ws(r);
		first = false;
		if (r->pos < r->len && r->s[r->pos] == ',')
		{
			r->pos++;
			continue;
		}
		if (r->pos < r->len && r->s[r->pos] == close)
		{
			r->pos++;
			return;
		}
		fail(r, "expected ',' or '%c'", close);
		return;
	}
}

static bool
literal(Reader *r, const char *word)
{
	size_t		n = strlen(word);

	if (r->len - r->pos >= n && memcmp(r->s + r->pos, word, n) == 0)
	{
		r->pos += n;
		return true;
	}
	return false;
}

static void
read_value(Reader *r, int depth, JsonType *type)
{
	JsonType	t = JV_NULL;

	skip_ws(r);
	if (r->pos >= r->len)
	{
		fail(r, "unexpected end of the text");
		return;
	}
	switch (r->s[r->pos])
	{
		case '{':
			t = JV_OBJECT;
			read_container(r, depth, true);
			break;
		case '[':
			t = JV_ARRAY;
			read_container(r, depth, false);
			break;
		case '"':
			t = JV_STRING;
			read_string(r, NULL);
			break;
		case 't':
		case 'f':
			t = JV_BOOL;
			if (!literal(r, "true") && !literal(r, "false"))
				fail(r, "unexpected character");
			break;
		case 'n':
			t = JV_NULL;
			if (!literal(r, "null"))
				fail(r, "unexpected character");
			break;
		case '-':
		case '0':
		case '1':
		case '2':
		case '3':
		case '4':
		case '5':
		case '6':
		case '7':
		case '8':
		case '9':
			t = JV_NUMBER;
			read_number(r);
			break;
		default:
			fail(r, "unexpected character");
			break;
	}
	if (type != NULL)
		*type = t;
}

void
json_members_free(JsonMember *m, int n)
{
	for (int i = 0; i < n; i++)
	{
		free(m[i].key);
		free(m[i].str);
	}
	free(m);
}

/*
 * Read text (len bytes) as one JSON object.  Returns the number of its
 * top-level members, with the members in *out (free with json_members_free;
 * a key given twice appears once, with its last value), or -1 with a message
 * in err.
 */
int
json_object_members(const char *text, size_t len, JsonMember **out, char *err, size_t errlen)
{
	Reader		r = {text, len, 0, err, errlen, false};
	JsonMember *m = NULL;
	int			n = 0;
	int			cap = 0;
	bool		first = true;

	*out = NULL;
	skip_ws(&r);
	if (r.pos >= r.len || r.s[r.pos] != '{')
	{
		fail(&r, "expected a JSON object");
		return -1;
	}
	r.pos++;
	for (;;)
	{
		char	   *key = NULL;
		JsonMember *cur;
		size_t		vstart;

		skip_ws(&r);
		if (first && r.pos < r.len && r.s[r.pos] == '}')
		{
			r.pos++;
			break;
		}
		if (r.pos >= r.len || r.s[r.pos] != '"')
		{
			fail(&r, "expected a string key");
			break;
		}
		read_string(&r, &key);
		if (r.failed)
			break;
		skip_ws(&r);
		if (r.pos >= r.len || r.s[r.pos] != ':')
		{
			free(key);
			fail(&r, "expected ':'");
			break;
		}
		r.pos++;
		skip_ws(&r);

		/* the last of a repeated key wins */
		cur = NULL;
		for (int i = 0; i < n; i++)
			if (strcmp(m[i].key, key) == 0)
			{
				cur = &m[i];
				free(cur->key);
				free(cur->str);
				break;
			}
		if (cur == NULL)
		{
			if (n == cap)
			{
				JsonMember *bigger;

				cap = cap ? cap * 2 : 8;
				bigger = realloc(m, cap * sizeof(JsonMember));
				if (bigger == NULL)
				{
					free(key);
					fail(&r, "out of memory");
					break;
				}
				m = bigger;
			}
			cur = &m[n++];
		}
		memset(cur, 0, sizeof(*cur));
		cur->key = key;
		vstart = r.pos;
		if (r.pos < r.len && r.s[r.pos] == '"')
		{
			cur->type = JV_STRING;
			read_string(&r, &cur->str);
		}
		else
			read_value(&r, 1, &cur->type);
		if (r.failed)
			break;
		cur->raw = r.s + vstart;
		cur->raw_len = r.pos - vstart;
		skip_ws(&r);
		first = false;
		if (r.pos < r.len && r.s[r.pos] == ',')
		{
			r.pos++;
			continue;
		}
		if (r.pos < r.len && r.s[r.pos] == '}')
		{
			r.pos++;
			break;
		}
		fail(&r, "expected ',' or '}'");
		break;
	}
	if (!r.failed)
	{
		skip_ws(&r);
		if (r.pos < r.len)
			fail(&r, "text after the JSON object");
	}
	if (r.failed)
	{
		json_members_free(m, n);
		return -1;
	}
	*out = m;
	return n;
}

/*
 * Is text (len bytes) exactly one JSON value of any type, with white space
 * around it at most?  False with a message in err.
 */
bool
json_value_check(const char *text, size_t len, char *err, size_t errlen)
{
	Reader		r = {text, len, 0, err, errlen, false};

	read_value(&r, 0, NULL);
	if (!r.failed)
	{
		skip_ws(&r);
		if (r.pos < r.len)
			fail(&r, "text after the JSON value");
	}
	return !r.failed;
}

const char *
json_type_name(JsonType t)
{
	switch (t)
	{
		case JV_NULL:
			return "null";
		case JV_BOOL:
			return "a boolean";
		case JV_NUMBER:
			return "a number";
		case JV_STRING:
			return "a string";
		case JV_ARRAY:
			return "an array";
		case JV_OBJECT:
			return "an object";
	}
	return "?";
}
