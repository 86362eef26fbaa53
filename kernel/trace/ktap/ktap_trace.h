/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The record type of a ktap session's output. Defined as a trace event
 * so that its format, fields and output function are ftrace's own:
 * `cat trace`, trace_pipe and trace-cmd read it like any other event.
 * ktap never fires the tracepoint; output.c writes the records straight
 * into the session's instance (see ktap_output_write()).
 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM ktap

#if !defined(_KTAP_TRACE_H) || defined(TRACE_HEADER_MULTI_READ)
#define _KTAP_TRACE_H

#include <linux/tracepoint.h>

/*
 * @text: what the script printed, without a final newline
 * @nl: a newline followed @text (a line of output, not a fragment)
 */
TRACE_EVENT(output,
	    TP_PROTO(const char *text, u32 len, bool nl),
	    TP_ARGS(text, len, nl),
	    TP_STRUCT__entry(__field(u8, nl)
			     __dynamic_array(char, text, len)),
	    TP_fast_assign(__entry->nl = nl;
			   memcpy(__get_dynamic_array(text), text, len);),
	    TP_printk("%.*s", __get_dynamic_array_len(text),
		      __get_str(text))
);

/*
 * A line that prints an event (print(e), printf("%s", e.tostring())):
 * @rec is the event's raw record, formatted when read by that event's
 * own output function, between @pre and @post. The TP_printk below is
 * only what tools that parse the format (trace-cmd) show; ftrace's
 * readers use ktap_output_event_funcs (output.c).
 */
TRACE_EVENT(output_event,
	    TP_PROTO(const void *rec, u32 rlen, const char *pre, u32 plen,
		     const char *post, u32 qlen, bool nl),
	    TP_ARGS(rec, rlen, pre, plen, post, qlen, nl),
	    TP_STRUCT__entry(__field(u8, nl)
			     __dynamic_array(u8, rec, rlen)
			     __dynamic_array(char, pre, plen)
			     __dynamic_array(char, post, qlen)),
	    TP_fast_assign(__entry->nl = nl;
			   memcpy(__get_dynamic_array(rec), rec, rlen);
			   memcpy(__get_dynamic_array(pre), pre, plen);
			   memcpy(__get_dynamic_array(post), post, qlen);),
	    TP_printk("%.*s<event>%.*s", __get_dynamic_array_len(pre),
		      __get_str(pre), __get_dynamic_array_len(post),
		      __get_str(post))
);

#endif /* _KTAP_TRACE_H */

#undef TRACE_INCLUDE_PATH
#define TRACE_INCLUDE_PATH .
#undef TRACE_INCLUDE_FILE
#define TRACE_INCLUDE_FILE ktap_trace
#include <trace/define_trace.h>
