/* Register offsets (generated). */
#ifndef _REG_H_
#define _REG
#ifdef CONFIG_B
#define mmB_CALL f(0) /)* note */
#else
#define mmB_CALL 0 // off
#endif

#endif /* _REG_H_ */
