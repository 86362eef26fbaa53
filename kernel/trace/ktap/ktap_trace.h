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

#endif /* _KTAP_TRACE_H */

#undef TRACE_INCLUDE_PATH
#define TRACE_INCLUDE_PATH .
#undef TRACE_INCLUDE_FILE
#define TRACE_INCLUDE_FILE ktap_trace
#include <trace/define_trace.h>
