/*
 * Unit tests of what a second read of a task says (src/runtimes/task.c,
 * ws_task_reread): the same context, a changed one (decoded anew, keeping
 * the sampler's scale and slot), and a record that holds another task by
 * then (a freed one, reused), which is the listed task gone, its record
 * untouched, so that the tick can keep its sample as listed.
 */
#include <criterion/criterion.h>

#include "ws_task.h"

static struct ws_task parked(uint64_t id, uint64_t sp)
{
	struct ws_task t = {
		.id = id,
		.address = 0x7000,
		.state = WS_STATE_WAITING,
		.start = WS_START_SAVED,
		.regs = {.valid = (1u << WS_REG_RIP) | (1u << WS_REG_RSP)},
	};
	t.regs.value[WS_REG_RIP] = 0x401000;
	t.regs.value[WS_REG_RSP] = sp;
	return t;
}

Test(task, reread_same)
{
	struct ws_task listed = parked(7, 0x8000), fresh = listed;
	cr_assert_eq(ws_task_reread(&listed, &fresh), WS_REREAD_SAME);
}

Test(task, reread_changed_keeps_scale_and_slot)
{
	struct ws_task listed = parked(7, 0x8000), fresh = parked(7, 0x7f00);
	listed.scale = 3.5;
	listed.slot = 0x6008;
	fresh.state = WS_STATE_RUNNABLE;
	cr_assert_eq(ws_task_reread(&listed, &fresh), WS_REREAD_CHANGED);
	cr_assert_eq(listed.regs.value[WS_REG_RSP], 0x7f00);
	cr_assert_eq(listed.state, WS_STATE_RUNNABLE);
	cr_assert_float_eq(listed.scale, 3.5, 1e-12);
	cr_assert_eq(listed.slot, 0x6008);
}

Test(task, reread_reused_record_is_gone_and_untouched)
{
	struct ws_task listed = parked(7, 0x8000), fresh = parked(8, 0x7f00);
	cr_assert_eq(ws_task_reread(&listed, &fresh), WS_REREAD_GONE);
	cr_assert_eq(listed.id, 7);
	cr_assert_eq(listed.regs.value[WS_REG_RSP], 0x8000);
	cr_assert_eq(listed.state, WS_STATE_WAITING);
}

/* A task of id 0 (a stand-in looked up by its record alone) takes the task
 * the record holds now, whichever it is. */
Test(task, reread_id_zero_takes_the_record_as_it_is)
{
	struct ws_task listed = parked(0, 0x8000), fresh = parked(8, 0x7f00);
	cr_assert_eq(ws_task_reread(&listed, &fresh), WS_REREAD_CHANGED);
	cr_assert_eq(listed.id, 8);
	cr_assert_eq(listed.regs.value[WS_REG_RSP], 0x7f00);
}
