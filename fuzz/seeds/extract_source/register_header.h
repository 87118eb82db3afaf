/* Register offsets (generated). */
#ifndef _REG_H_
#define _REG_H_

#include <linux/types.h>

// block A
#define mmA_CNTL	0x0010
#define mmA_CNTL_BASE_IDX 0
#define A_ALIAS mmA_CNTL
#ifdef CONFIG_B
#define mmB_CALL f(1) /* note */
#else
#define mmB_CALL 0 // off
#endif

#endif /* _REG_H_ */
